#include <cstdio>

#include "core/interrupt.h"
#include "model/gen_model.h"
#include "tools/tandem/commands.h"
#include "tools/tandem/numeric_options.h"
#include "tools/tandem/progress_bar.h"

namespace tandem::cli {

Command add_gen_model(CLI::App& app) {
  struct Opts {
    std::string preset, arch = "llama", vocab, type = "f32", out;
    int dim = 0, layers = 0, heads = 0, kv_heads = 0, ffn = 0, ctx = 2048, head_dim = 0, window = 0, swa_period = 0, longrope = 0;
    bool tied = false;
    uint64_t seed = 42;
    int threads = default_threads();
  };
  auto o = std::make_shared<Opts>();
  CLI::App* sub = app.add_subcommand("gen-model", "Write a GGUF model with random weights and real shapes");
  auto* preset = sub->add_option("--preset", o->preset, "tinyllama-1.1b | llama3.2-1b | qwen2.5-0.5b | qwen3-0.6b | phi3-mini | gemma2-2b | gemma3-1b | test-small | ...");
  auto* arch = sub->add_option("--arch", o->arch, "llama | qwen2 | qwen3 | phi3 | gemma2 | gemma3 (custom shape)");
  // The shape options: a custom shape with --arch, or what they name replaced in a --preset's
  // (a small model with a preset's architecture and vocabulary, e.g. phi3-mini's 32064 tokens).
  sub->add_option("--dim", o->dim, "embedding size, 1..65536")->transform(integer_in(1, 65536));
  sub->add_option("--layers", o->layers, "transformer blocks, 1..1024")->transform(integer_in(1, 1024));
  sub->add_option("--heads", o->heads, "attention heads, 1..1024")->transform(integer_in(1, 1024));
  sub->add_option("--kv-heads", o->kv_heads, "key/value heads (grouped-query attention), 1..1024")->transform(integer_in(1, 1024));
  sub->add_option("--ffn", o->ffn, "feed-forward size, 1..1048576")->transform(integer_in(1, 1 << 20));
  sub->add_option("--head-dim", o->head_dim, "size of one attention head, 1..4096 (default: dim / heads)")->transform(integer_in(1, 4096));
  sub->add_option("--ctx", o->ctx, "context length written to the file, 1..1048576")->transform(integer_in(1, 1 << 20))->capture_default_str();
  sub->add_option("--sliding-window", o->window, "gemma2/gemma3: keys a local layer sees, 1..1048576 (default: gemma2 4096, gemma3 none)")->transform(integer_in(1, 1 << 20));
  sub->add_option("--longrope-original-ctx", o->longrope, "phi3: write LongRoPE factors for this original context, 1..1048576 (below --ctx)")->transform(integer_in(1, 1 << 20));
  sub->add_option("--swa-period", o->swa_period, "gemma2/gemma3: of every N layers the last is global, 1..1024 (default: 2 / 6)")->transform(integer_in(1, 1024));
  sub->add_flag("--tied", o->tied, "no output.weight: logits reuse token_embd.weight");
  preset->excludes(arch);
  sub->add_option("--vocab", o->vocab, "GGUF whose tokenizer is copied (default: the built-in Llama SentencePiece vocabulary)");
  sub->add_option("--type", o->type, "one type for every matrix (f32 | f16 | bf16 | q8_0 | q4_0 | q4_1 | q5_0 | q5_1 | q2_k | q3_k | q4_k | q5_k | q6_k | iq4_nl | iq4_xs) or a llama-quantize mix (q4_k_m | q4_k_s | q5_k_m | q5_k_s | q3_k_m | q3_k_s | q3_k_l | q2_k)")->capture_default_str();
  sub->add_option("--seed", o->seed, "random seed, 0..2^64-1")->transform(any_uint64())->capture_default_str();
  sub->add_option("-t,--threads", o->threads, "threads for drawing and quantizing, 1..1024")->transform(integer_in(1, 1024))->capture_default_str();
  sub->add_option("-o,--output", o->out, "output GGUF file")->required();
  return {sub, [o, sub]() -> Status {
            GenModelOptions g;
            if (!o->preset.empty()) {
              auto shape = model_preset(o->preset);
              if (!shape) {
                std::string names;
                for (const std::string& n : model_preset_names()) names += (names.empty() ? "" : ", ") + n;
                return InvalidArgument("--preset: unknown preset '" + o->preset + "' (known: " + names + ")");
              }
              g.shape = *shape;
              // Shape options given beside a preset replace its values (they were ignored before:
              // `--preset phi3-mini --dim 256` wrote the whole 15 GB phi3-mini).
              auto given = [&](const char* name) { return sub->get_option(name)->count() > 0; };
              if (given("--dim")) g.shape.dim = o->dim;
              if (given("--layers")) g.shape.n_layers = o->layers;
              if (given("--heads")) g.shape.n_heads = o->heads;
              if (given("--kv-heads")) g.shape.n_kv_heads = o->kv_heads;
              if (given("--ffn")) g.shape.ffn_dim = o->ffn;
              if (given("--head-dim")) g.shape.head_dim = o->head_dim;
              if (given("--ctx")) g.shape.context_length = o->ctx;
              if (given("--sliding-window")) g.shape.sliding_window = o->window;
              if (given("--longrope-original-ctx")) g.shape.longrope_original_context = o->longrope;
              if (given("--swa-period")) g.shape.swa_period = o->swa_period;
              if (given("--tied")) g.shape.tied_embeddings = true;
            } else {
              const ArchDescription* desc = find_arch(o->arch);
              if (!desc) return InvalidArgument("--arch: '" + o->arch + "' is not supported (" + arch_name_list() + ")");
              g.shape.arch = desc->arch;
              if (!o->dim || !o->layers || !o->heads || !o->ffn) {
                return InvalidArgument("gen-model: give --preset NAME, or --dim, --layers, --heads, --kv-heads and --ffn");
              }
              g.shape.name = "custom";
              g.shape.dim = o->dim;
              g.shape.n_layers = o->layers;
              g.shape.n_heads = o->heads;
              g.shape.n_kv_heads = o->kv_heads ? o->kv_heads : o->heads;
              g.shape.ffn_dim = o->ffn;
              g.shape.context_length = o->ctx;
              g.shape.tied_embeddings = o->tied;
              g.shape.head_dim = o->head_dim;
              g.shape.sliding_window = o->window;
              g.shape.swa_period = o->swa_period;
              g.shape.longrope_original_context = o->longrope;
              if (g.shape.arch != Arch::kLlama && g.shape.arch != Arch::kPhi3) g.shape.rope_base = 1000000.0f, g.shape.rms_eps = 1e-6f;
            }
            // A single type goes to every matrix; a mix (q4_k_m, ...) gets llama-quantize's per-tensor types.
            if (auto type = dtype_from_name(o->type)) {
              g.type = *type;
            } else {
              Result<QuantizeTarget> mix = parse_quantize_target(o->type);
              if (!mix.ok()) return InvalidArgument("--type: " + mix.status().message());
              g.mix = *mix;
              g.type = mix->base;
            }
            g.seed = o->seed;
            g.n_threads = o->threads;
            g.vocab_path = o->vocab.empty() ? data_dir() + "/vocab/llama-spm.gguf" : o->vocab;
            ProgressBar bar("gen-model " + g.shape.name);
            g.progress = [&bar](double f) { bar.update(f); };
            InterruptScope interruptible;  // Ctrl-C stops between tensors; the temporary file goes
            TANDEM_RETURN_IF_ERROR(generate_model(g, o->out));
            std::fprintf(stderr, "gen-model: wrote %s (%s, %s, random weights)\n", o->out.c_str(),
                         g.shape.name.c_str(), o->type.c_str());
            return Status::Ok();
          }};
}

}  // namespace tandem::cli
