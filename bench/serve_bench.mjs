// tandem serve's throughput as clients add up: for each slot count, starts `tandem serve
// --slots N`, sends N concurrent chat requests that each generate exactly TOKENS tokens
// (ignore_eos), and reports the aggregate generated tokens per second, the per-request decode
// speed and the time to first token; then the same N requests on one slot (queued one after the
// other), for the batching gain. Prints a table and writes JSON lines.
//
//   node bench/serve_bench.mjs MODEL.gguf [--slots "1 2 4 8"] [--tokens 64] [--threads 2]
//        [--rounds 3] [--out serve-bench.jsonl] [--tandem build/release/bin/tandem] [--ctx 1024]
//        [--template NAME|FILE.jinja] (a model without tokenizer.chat_template needs one)
// Plain fetch: no npm packages needed.
import { spawn } from 'node:child_process';
import { appendFileSync, writeFileSync } from 'node:fs';
import { parseArgs } from 'node:util';

const { values: o, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    slots: { type: 'string', default: '1 2 4 8' }, tokens: { type: 'string', default: '64' },
    threads: { type: 'string', default: '2' }, rounds: { type: 'string', default: '3' },
    out: { type: 'string', default: 'serve-bench.jsonl' }, tandem: { type: 'string', default: 'build/release/bin/tandem' },
    ctx: { type: 'string', default: '1024' }, template: { type: 'string' },
  },
});
if (positionals.length !== 1) {
  console.error('usage: node bench/serve_bench.mjs MODEL.gguf [--slots "1 2 4 8"] [--tokens 64] [--threads 2] ...');
  process.exit(2);
}
const model = positionals[0], tokens = Number(o.tokens), rounds = Number(o.rounds);
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

function startServer(slots) {
  return new Promise((resolve, reject) => {
    const p = spawn(o.tandem, ['serve', '-m', model, '--port', '0', '--slots', String(slots), '-t', o.threads,
                               '-c', o.ctx, ...(o.template ? ['--template', o.template] : [])], { stdio: ['ignore', 'pipe', 'pipe'] });
    let err = '';
    p.stderr.on('data', (d) => { err += d; });
    p.stdout.on('data', (d) => {
      const m = /listening on (http:\S+)/.exec(String(d));
      if (m) resolve({ p, url: m[1] });
    });
    p.on('exit', (code) => reject(new Error(`tandem serve exited ${code}: ${err}`)));
  });
}

// One streamed request: time to its first token and to its end.
async function request(url, i) {
  const t0 = performance.now();
  const r = await fetch(`${url}/v1/chat/completions`, {
    method: 'POST', headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({ messages: [{ role: 'user', content: `Tell story number ${i}.` }], max_tokens: tokens,
                           ignore_eos: true, temperature: 0.8, seed: i, stream: true,
                           stream_options: { include_usage: true } }),
  });
  let first = 0, usage = null, buffer = '';
  for await (const part of r.body) {
    buffer += Buffer.from(part).toString();
    let at;
    while ((at = buffer.indexOf('\n\n')) >= 0) {
      const event = buffer.slice(0, at);
      buffer = buffer.slice(at + 2);
      if (!event.startsWith('data: ') || event === 'data: [DONE]') continue;
      const j = JSON.parse(event.slice(6));
      if (j.usage) usage = j.usage;
      if (!first && j.choices?.[0]?.delta?.content) first = performance.now();
    }
  }
  return { ttft: first - t0, total: performance.now() - t0, tokens: usage.completion_tokens };
}

async function measure(url, clients) {
  const t0 = performance.now();
  const rs = await Promise.all(Array.from({ length: clients }, (_, i) => request(url, i)));
  const seconds = (performance.now() - t0) / 1000;
  const generated = rs.reduce((a, r) => a + r.tokens, 0);
  return { seconds, tok_s: generated / seconds, ttft_ms: median(rs.map((r) => r.ttft)),
           per_request_tok_s: median(rs.map((r) => (r.tokens - 1) / ((r.total - r.ttft) / 1000))) };
}

writeFileSync(o.out, '');
const rows = [];
for (const slots of o.slots.split(/\s+/).map(Number)) {
  for (const serverSlots of slots === 1 ? [1] : [slots, 1]) {
    const { p, url } = await startServer(serverSlots);
    await measure(url, 1);  // warm: packs the weights, faults the pages in
    const runs = [];
    for (let r = 0; r < rounds; r++) runs.push(await measure(url, slots));
    p.kill('SIGTERM');
    await new Promise((res) => p.on('exit', res));
    const row = { model, clients: slots, server_slots: serverSlots, tokens, threads: Number(o.threads),
                  tok_s: median(runs.map((x) => x.tok_s)), tok_s_min: Math.min(...runs.map((x) => x.tok_s)),
                  tok_s_max: Math.max(...runs.map((x) => x.tok_s)), ttft_ms: median(runs.map((x) => x.ttft_ms)),
                  per_request_tok_s: median(runs.map((x) => x.per_request_tok_s)) };
    rows.push(row);
    appendFileSync(o.out, JSON.stringify(row) + '\n');
  }
}
console.log('| clients | slots | aggregate tok/s (min-max) | per request tok/s | TTFT ms |');
console.log('| ------: | ----: | ------------------------: | ----------------: | ------: |');
for (const r of rows) {
  console.log(`| ${r.clients} | ${r.server_slots} | ${r.tok_s.toFixed(1)} (${r.tok_s_min.toFixed(1)}-${r.tok_s_max.toFixed(1)}) | ` +
              `${r.per_request_tok_s.toFixed(1)} | ${r.ttft_ms.toFixed(0)} |`);
}
