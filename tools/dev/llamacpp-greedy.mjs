// Developer cross-check: llama.cpp's greedy continuation of prompt ids, through the
// node-llama-cpp npm package (see ../shared/anchors/README.md for installing it).
//
//   node tools/dev/llamacpp-greedy.mjs MODEL.gguf "1 300 301" 16
// prints the generated ids, space-separated; compare with
//   tandem run -m MODEL.gguf --prompt-ids "1 300 301" -n 16 --temp 0 --ids
import {getLlama, LlamaLogLevel} from "node-llama-cpp";

const [modelPath, idsText, nText] = process.argv.slice(2);
if (!modelPath || !idsText) {
  console.error("usage: node llamacpp-greedy.mjs MODEL.gguf \"1 2 3\" [N]");
  process.exit(2);
}
const ids = idsText.trim().split(/[\s,]+/).map(Number);
const n = Number(nText ?? 16);
const llama = await getLlama({gpu: false, build: "never", logLevel: LlamaLogLevel.error});
const model = await llama.loadModel({modelPath, gpuLayers: 0});
const ctx = await model.createContext({contextSize: Math.max(256, ids.length + n + 8), threads: 2});
const seq = ctx.getSequence();
const out = [];
for await (const t of seq.evaluate(ids, {temperature: 0})) {
  out.push(t);
  if (out.length >= n) break;
}
console.log(out.join(" "));
await ctx.dispose();
await model.dispose();
