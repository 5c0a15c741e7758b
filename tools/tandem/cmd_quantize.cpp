#include <cstdio>

#include "core/interrupt.h"
#include "model/quantize/quantize.h"
#include "model/quantize/quantize_rules.h"
#include "tools/tandem/commands.h"
#include "tools/tandem/numeric_options.h"
#include "tools/tandem/progress_bar.h"

namespace tandem::cli {

Command add_quantize(CLI::App& app) {
  struct Opts {
    std::string in, out, type;
    bool pure = false;
    bool leave_output = false;
    std::string output_type, embedding_type;
    int threads = default_threads();
  };
  auto o = std::make_shared<Opts>();
  CLI::App* sub = app.add_subcommand(
      "quantize", "Rewrite a GGUF model's weights in another type or mix, as llama-quantize does (no importance matrix)");
  sub->add_option("input", o->in, "GGUF model to read")->required();
  sub->add_option("output", o->out, "GGUF file to write")->required();
  sub->add_option("type", o->type, "a mix (q4_k_m, q4_k_s, q5_k_m, q5_k_s, q3_k_m, q3_k_s, q3_k_l, q2_k) or one type: " +
                                        quantize_target_names())
      ->required();
  sub->add_flag("--pure", o->pure, "every 2-D weight in TYPE (no mix upgrades; 1-D tensors stay as they are)");
  sub->add_flag("--leave-output-tensor", o->leave_output, "keep output.weight as it is (llama-quantize's flag)");
  sub->add_option("--output-tensor-type", o->output_type, "output.weight in this type (f32, f16, q8_0, ...)");
  sub->add_option("--token-embedding-type", o->embedding_type, "token_embd.weight in this type (f32, f16, q8_0, ...)");
  sub->add_option("-t,--threads", o->threads, "threads for quantizing, 1..1024")->transform(integer_in(1, 1024))->capture_default_str();
  return {sub, [o]() -> Status {
            ProgressBar bar("quantize " + o->type);
            QuantizeOptions q;
            q.pure = o->pure;
            q.leave_output_tensor = o->leave_output;
            for (auto [text, into, flag] : {std::tuple{&o->output_type, &q.output_tensor_type, "--output-tensor-type"},
                                            std::tuple{&o->embedding_type, &q.token_embedding_type, "--token-embedding-type"}}) {
              if (text->empty()) continue;
              const std::optional<DType> t = dtype_from_name(*text);
              if (!t) return InvalidArgument(std::string(flag) + ": '" + *text + "' is not a type (f32, f16, bf16, q8_0, q4_0, q4_k, ...)");
              *into = *t;
            }
            q.n_threads = o->threads;
            q.progress = [&bar](double f) { bar.update(f); };
            InterruptScope interruptible;  // Ctrl-C stops between tensors; the temporary file goes
            TANDEM_ASSIGN_OR_RETURN(const QuantizeSummary s, quantize_model(o->in, o->out, o->type, q));
            std::printf("| %-8s | %7s |\n|----------|--------:|\n", "type", "tensors");
            for (const auto& [type, n] : s.tensors_by_type) std::printf("| %-8s | %7d |\n", std::string(dtype_name(type)).c_str(), n);
            std::printf("quantize: wrote %s: %.2f MiB of tensors from %.2f MiB (%d rewritten, %d copied)\n", o->out.c_str(),
                        double(s.out_bytes) / 1048576.0, double(s.in_bytes) / 1048576.0, s.converted, s.copied);
            return Status::Ok();
          }};
}

}  // namespace tandem::cli
