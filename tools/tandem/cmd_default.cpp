// What `tandem` does with no subcommand (README command 1): the main job on a built-in model.
// A CPU generation and bench first, then the same prompt on this machine's devices at once with the
// solver's plan, then the same model predicted on the modeled Snapdragon 8 Gen 3, and one table of
// all three saying what is measured, what is emulated and what is predicted.
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <vector>

#include "core/interrupt.h"
#include "devices/cpu/matmul/matmul.h"
#include "devices/registry.h"
#include "model/gen_model.h"
#include "runtime/graph_forward.h"
#include "runtime/greedy_parting.h"
#include "runtime/session.h"
#include "tools/tandem/bench.h"
#include "tools/tandem/commands.h"
#include "tools/tandem/execution_report_view.h"
#include "tools/tandem/progress_bar.h"
#include "tools/tandem/session_factory.h"
#include "tools/tandem/simulation.h"

namespace tandem::cli {
namespace {

constexpr int kGenerate = 32;
// Long enough that the prompt is a real prefill (the NPU's static lengths pad it in place).
const char* const kPrompt =
    "Once upon a time, in a small village at the edge of a great forest, there lived an old clockmaker who "
    "could mend anything but his own heart.";

struct Generation {
  std::vector<TokenId> ids;
  GenerateStats stats;
};

// Greedy, so the devices' tokens can be compared with the cpu's; the text is printed as it comes
// unless quiet.
Result<Generation> generate(const Model& model, Session& session, const std::vector<TokenId>& prompt, bool quiet = false,
                            int n_predict = kGenerate) {
  GenerateOptions g;
  g.n_predict = n_predict;
  g.sampler.temperature = 0.0f;
  Generation out;
  if (!quiet) std::cout << kPrompt;
  TANDEM_RETURN_IF_ERROR(session.generate(prompt, g, [&](TokenId t) {
    out.ids.push_back(t);
    if (!quiet) std::cout << model.tokenizer().token_to_piece(t, false) << std::flush;
    return true;
  }, &out.stats));
  if (quiet) return out;
  std::printf("\n(prompt %d tokens at %.1f tok/s, %d generated at %.1f tok/s)\n", out.stats.n_prompt,
              out.stats.n_prompt / std::max(1e-9, out.stats.prefill_seconds), out.stats.n_generated,
              out.stats.n_generated / std::max(1e-9, out.stats.decode_seconds));
  return out;
}

// How far the devices' logits may lie from the cpu's fp32 ones, relative to the largest logit:
// the npu rounds activations to fp16 (2^-11 relative per element) before every matmul it takes,
// through every layer of the plan. Measured on the default model: 1.0e-3 to 1.6e-3; an
// element dropped from one fp16 row: 0.3.
constexpr double kDevicesLogitBudget = 1e-2;

double rate(int n, double seconds) { return seconds > 0 ? n / seconds : 0.0; }

// The cpu's fp32 arithmetic (the oracle path) while it lives; the fast one it had after.
class Fp32Arithmetic {
 public:
  Fp32Arithmetic() : gemm_(cpu::gemm_precision()), decode_(cpu::decode_precision()) {
    cpu::set_gemm_precision(cpu::GemmPrecision::kFp32);
    cpu::set_decode_precision(cpu::DecodePrecision::kFp32);
  }
  ~Fp32Arithmetic() {
    cpu::set_gemm_precision(gemm_);
    cpu::set_decode_precision(decode_);
  }

 private:
  cpu::GemmPrecision gemm_;
  cpu::DecodePrecision decode_;
};

// Where `other`'s greedy tokens part from the cpu's at fp32, and what both forwards' logits say there.
Result<GreedyParting> parting_from_fp32(std::shared_ptr<const Model> model, Forward& other, const std::vector<TokenId>& prompt,
                                        const std::vector<TokenId>& fp32_ids, const std::vector<TokenId>& other_ids,
                                        int threads) {
  Fp32Arithmetic fp32;
  TANDEM_ASSIGN_OR_RETURN(std::unique_ptr<GraphForward> reference, make_cpu_forward(model, {threads, 256, 256}));
  return examine_parting(*reference, other, prompt, fp32_ids, other_ids, model->config().n_vocab);
}

// The Hexagon row's tokens: fewer, since qemu-hexagon emulates the DSP at ~0.1 GMAC/s.
constexpr int kHexagonGenerate = 8;
// Its logits' budget against the cpu's fp32 where the tokens part: int8 activations per block
// (2^-8 of each block's largest |x|) through every layer (tests/hexagon's kIntegerLogitBudget).
constexpr double kHexagonLogitBudget = 5e-2;

struct HexagonRow {
  bool ran = false;
  std::string devices, why_not;
  Generation run;
  std::string tokens_cell;
  bool same = true;
};

// The same prompt with the NPU's role on the Hexagon DSP (HVX code under qemu-hexagon), its first
// tokens checked against the cpu's.
Result<HexagonRow> run_hexagon_row(std::shared_ptr<Model> model, const std::vector<TokenId>& prompt, bool opencl,
                                   const Generation& cpu, const Generation& cpu_fp32, int threads) {
  HexagonRow row;
  row.devices = std::string(opencl ? "opencl" : "cpu") + ",hexagon";
  DeviceOptions d;
  d.devices = row.devices;
  d.strategy = "weight-centric";
  TANDEM_ASSIGN_OR_RETURN(std::unique_ptr<Forward> forward, make_forward(model, d, threads, 256, 256));
  std::unique_ptr<Session> session = Session::over(model, std::move(forward));
  TANDEM_ASSIGN_OR_RETURN(row.run, generate(*model, *session, prompt, false, kHexagonGenerate));
  row.ran = true;
  auto prefix = [](const std::vector<TokenId>& ids) {
    return std::vector<TokenId>(ids.begin(), ids.begin() + std::min<size_t>(ids.size(), kHexagonGenerate));
  };
  if (row.run.ids == prefix(cpu_fp32.ids) || row.run.ids == prefix(cpu.ids)) {
    row.tokens_cell = "equal";
    std::printf("greedy tokens: the first %d equal to the cpu's\n", kHexagonGenerate);
    return row;
  }
  Result<GreedyParting> parting =
      parting_from_fp32(model, session->forward(), prompt, prefix(cpu_fp32.ids), row.run.ids, threads);
  TANDEM_RETURN_IF_ERROR(parting.status());
  row.same = parting->logit_error <= kHexagonLogitBudget;
  row.tokens_cell = row.same ? "tie at " + std::to_string(parting->index) : "DIFFERENT";
  std::printf("greedy tokens: %s%zu of %d equal to the cpu's at fp32, then they part where the cpu's top two differ by %.2g "
              "of its largest logit, the DSP's logits within %.2g of the cpu's there (int8 budget %.0e)\n",
              row.same ? "" : "DIFFERENT: ", parting->index, kHexagonGenerate, parting->margin, parting->logit_error,
              kHexagonLogitBudget);
  return row;
}

}  // namespace

Status run_default_job() {
  const int threads = default_threads();
  const std::string dir = user_cache_dir();
  const std::string path = dir + "/default-demo-q4_0.gguf";
  const std::string trace = dir + "/default-demo-trace.json";
  std::printf("tandem: no model given, so this runs the built-in default.\n");
  std::printf("NOTE: the default model has RANDOM weights (shape 'demo', ~60 M parameters, Q4_0) and the\n"
              "      Llama SentencePiece tokenizer, so the text below is noise; the speed is real.\n\n");
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return IoError(dir + ": cannot create the cache folder: " + ec.message());
  if (!std::filesystem::exists(path)) {
    std::printf("[1/6] building the default model at %s ...\n", path.c_str());
    GenModelOptions g;
    g.shape = *model_preset("demo");
    g.type = DType::Q4_0;
    g.vocab_path = data_dir() + "/vocab/llama-spm.gguf";
    g.n_threads = threads;
    ProgressBar bar("      writing");
    g.progress = [&bar](double f) { bar.update(f); };
    // The writer writes a temporary beside PATH and renames it, and Ctrl-C stops it between
    // tensors: an interrupted run leaves no half model.
    InterruptScope interruptible;
    TANDEM_RETURN_IF_ERROR(generate_model(g, path));
  } else {
    std::printf("[1/6] using the default model at %s\n", path.c_str());
  }
  TANDEM_ASSIGN_OR_RETURN(std::shared_ptr<Model> model, Model::load(path));
  const std::vector<TokenId> prompt = model->tokenizer().encode(kPrompt, true, true);

  std::printf("\n[2/6] tandem run -m %s -p \"...\" -n %d --temp 0   (the cpu, %d threads)\n", path.c_str(), kGenerate, threads);
  TANDEM_ASSIGN_OR_RETURN(std::unique_ptr<Session> cpu_session, Session::create(model, {threads, 256, 256}));
  TANDEM_ASSIGN_OR_RETURN(Generation cpu, generate(*model, *cpu_session, prompt));
  // The devices compute in fp32; the cpu's prefill GEMM may round activations to bf16 and its Q4_0 /
  // Q8_0 decode to int8 for speed (llama.cpp rounds both to q8_0), which can flip an argmax where
  // a random model's logits nearly tie. The devices' tokens are compared with the cpu's at fp32
  // too, generated here quietly.
  Result<Generation> cpu_fp32 = [&] {
    Fp32Arithmetic fp32;
    return generate(*model, *cpu_session, prompt, /*quiet=*/true);
  }();
  TANDEM_RETURN_IF_ERROR(cpu_fp32.status());
  cpu_session.reset();

  std::printf("\n[3/6] tandem bench -m %s -p 128 -n 32 -r 3 -t %d\n", path.c_str(), threads);
  BenchOptions b;
  b.n_prompt = 128;
  b.n_gen = 32;
  b.reps = 3;
  b.threads = threads;
  ProgressBar bench_bar("      bench");
  b.progress = [&bench_bar](double f) { bench_bar.update(f); };
  TANDEM_ASSIGN_OR_RETURN(BenchResult r, run_bench(model, b));
  print_bench(*model, b, r, false, path);

  // The machine's devices at once: the GPU's role (OpenCL; PoCL on a CPU) with the NPU (the
  // emulated one), or the cpu in the GPU's role where there is no OpenCL device.
  bool opencl = false;
  std::string hexagon_missing = "not in this build";
  for (const devices::DeviceListing& d : devices::list_devices(nullptr, threads)) {
    opencl |= d.name == "opencl" && d.available;
    if (d.name == "hexagon") hexagon_missing = d.available ? "" : d.unavailable;
  }
  DeviceOptions hetero;
  hetero.devices = opencl ? "opencl,npu" : "cpu,npu";
  hetero.trace = trace;
  std::printf("\n[4/6] tandem run -m %s -p \"...\" -n %d --temp 0 --devices %s -v --trace %s\n", path.c_str(), kGenerate,
              hetero.devices.c_str(), trace.c_str());
  std::printf("      (the solver's plan, from a profile of these devices made once and cached in %s/profiles)\n", dir.c_str());
  TANDEM_ASSIGN_OR_RETURN(std::unique_ptr<Forward> forward, make_forward(model, hetero, threads, 256, 256));
  std::unique_ptr<Session> hetero_session = Session::over(model, std::move(forward));
  TANDEM_ASSIGN_OR_RETURN(Generation devices_run, generate(*model, *hetero_session, prompt));
  TANDEM_RETURN_IF_ERROR(hetero_session->forward().write_trace(trace));
  std::printf("%s", execution_table(hetero_session->forward().execution_report()).c_str());
  std::printf("timeline: %s (open it in https://ui.perfetto.dev: a track per device, one for sync)\n", trace.c_str());
  // The devices mix fp32 (OpenCL) and fp16 (the npu's W4A16) arithmetic, and the plan (solved
  // from a timed profile) decides which matmul gets which: where their tokens part from the cpu's
  // at fp32 at a near-tie of this random model, either side is a right answer, and the logits at
  // that step tell: within the fp16 budget of the cpu's fp32 logits, a near-tie; beyond it, a bug.
  const bool same_fp32 = devices_run.ids == cpu_fp32->ids, same_fast = devices_run.ids == cpu.ids;
  bool same = same_fp32 || same_fast;
  size_t parted_at = 0;
  std::string agreement = same_fp32   ? "equal to the cpu's at fp32 activations"
                          : same_fast ? "equal to the cpu's with its bf16 / int8 activations"
                                      : "";
  if (!same) {
    Result<GreedyParting> parting =
        parting_from_fp32(model, hetero_session->forward(), prompt, cpu_fp32->ids, devices_run.ids, threads);
    TANDEM_RETURN_IF_ERROR(parting.status());
    same = parting->logit_error <= kDevicesLogitBudget;
    parted_at = parting->index;
    char line[400];
    std::snprintf(line, sizeof line,
                  "%s%zu of %d equal to the cpu's at fp32, then they part where the cpu's top two differ by %.2g of its "
                  "largest logit, with the devices' logits within %.2g of the cpu's there (fp16 budget %.0e)%s",
                  same ? "" : "DIFFERENT: ", parting->index, kGenerate, parting->margin, parting->logit_error,
                  kDevicesLogitBudget, same ? ": a near-tie" : ": beyond the arithmetic's rounding");
    agreement = line;
  }
  // The table's cell: "equal", or "tie at K" where they part at a near-tie after K equal tokens.
  std::string tokens_cell = same ? "equal" : "DIFFERENT";
  if (same && !same_fp32 && !same_fast) tokens_cell = "tie at " + std::to_string(parted_at);
  std::printf("greedy tokens: %s", agreement.c_str());
  if (cpu_fp32->ids != cpu.ids)
    std::printf(" (the cpu's fast arithmetic and its fp32 one part at a near-tie of this random model)");
  std::printf("\n");

  // The NPU's real instruction set where the toolchain is: the DSP in the NPU's role.
  HexagonRow hexagon;
  if (hexagon_missing.empty()) {
    std::printf("\n[5/6] tandem run -m %s -p \"...\" -n %d --temp 0 --devices %s,hexagon --strategy weight-centric\n"
                "      (npu: Hexagon v66 HVX code under qemu-hexagon, emulated instruction by instruction: slow)\n",
                path.c_str(), kHexagonGenerate, opencl ? "opencl" : "cpu");
    TANDEM_ASSIGN_OR_RETURN(hexagon, run_hexagon_row(model, prompt, opencl, cpu, *cpu_fp32, threads));
  } else {
    std::printf("\n[5/6] the Hexagon DSP: skipped, %s\n", hexagon_missing.c_str());
  }

  std::printf("\n[6/6] tandem simulate --soc sd8gen3 -m %s --prompt %d --gen %d   (the solver's plan for the SoC model)\n",
              path.c_str(), cpu.stats.n_prompt, kGenerate);
  SimulationRequest q;
  q.prompt = cpu.stats.n_prompt;
  q.gen = kGenerate;
  TANDEM_ASSIGN_OR_RETURN(Simulation sim, simulate_request(*model, q));

  std::printf("\nThe same model, prompt (%d tokens) and %d greedy tokens, three ways:\n", cpu.stats.n_prompt, kGenerate);
  auto row = [](const std::string& where, const std::string& what, double prefill, double decode, const char* tokens) {
    std::printf("| %-44s | %-42s | %11.1f | %10.1f | %-13s |\n", where.c_str(), what.c_str(), prefill, decode, tokens);
  };
  std::printf("| %-44s | %-42s | %11s | %10s | %-13s |\n", "where", "devices, partition", "prefill t/s", "decode t/s", "greedy tokens");
  std::printf("| %s | %s | %s | %s | %s |\n", std::string(44, '-').c_str(), std::string(42, '-').c_str(), "----------:",
              "---------:", "-------------");
  row("this machine, measured", "cpu, " + std::to_string(threads) + " threads", rate(cpu.stats.n_prompt, cpu.stats.prefill_seconds),
      rate(cpu.stats.n_generated, cpu.stats.decode_seconds), "the reference");
  row("this machine, measured", hetero.devices + ", the solver's plan", rate(devices_run.stats.n_prompt, devices_run.stats.prefill_seconds),
      rate(devices_run.stats.n_generated, devices_run.stats.decode_seconds), tokens_cell.c_str());
  if (hexagon.ran)
    row("npu: Hexagon v66 HVX code under qemu-hexagon", hexagon.devices + ", weight-centric (emulated)",
        rate(hexagon.run.stats.n_prompt, hexagon.run.stats.prefill_seconds),
        rate(hexagon.run.stats.n_generated, hexagon.run.stats.decode_seconds), hexagon.tokens_cell.c_str());
  row("Snapdragon 8 Gen 3 (" + sim.soc + "), predicted", "gpu,npu, " + sim.strategy, sim.result.prefill_tok_s,
      sim.result.decode_tok_s, "-");
  std::printf("Measured here: the cpu%s.\n"
              "Emulated here: the npu, a functional + timed model of a Hexagon-like NPU on the same cores, so the\n"
              "  second row shows the mechanism (the plan's splits, the sync, equal tokens), not a phone's speed.\n"
              "%s"
              "Predicted: the last row, the simulator's model of the SoC (data/soc/%s.json, every number with its\n"
              "  source) running the same partitioner and solver.\n",
              opencl ? " and OpenCL (PoCL, on this machine's CPU cores)" : " (no OpenCL device here: the cpu took the GPU's role)",
              hexagon.ran ? "Emulated ISA: the Hexagon row's matmuls are real Hexagon v66 HVX instructions (built by clang-19),\n"
                            "  run by qemu-hexagon in a DSP process: its tokens are the DSP's, its speed the emulator's.\n"
                          : "",
              sim.soc.c_str());

  std::printf("\nTo run your own model (a GGUF of a llama, qwen2, qwen3, phi3, gemma2 or gemma3 model, f32/f16/bf16/q8_0/q4_0):\n"
              "  build/release/bin/tandem run -m YOUR_MODEL.gguf -p \"Your prompt\" -n 128\n"
              "  build/release/bin/tandem run -m YOUR_MODEL.gguf -p \"Your prompt\" --devices opencl,npu -v\n"
              "  build/release/bin/tandem bench -m YOUR_MODEL.gguf\n"
              "or make a random model of a real shape:\n"
              "  build/release/bin/tandem gen-model --preset tinyllama-1.1b --type q4_0 -o tinyllama-q4_0.gguf\n");
  std::fflush(stdout);
  if (!hexagon.same) return Internal("the Hexagon DSP's greedy tokens differ from the cpu's (a bug: please report it with this output)");
  if (!same) return Internal("the devices' greedy tokens differ from the cpu's (a bug: please report it with this output)");
  return Status::Ok();
}

}  // namespace tandem::cli
