#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iostream>

#include "model/gen_model.h"
#include "runtime/session.h"
#include "tools/tandem/bench.h"
#include "tools/tandem/commands.h"
#include "tools/tandem/progress_bar.h"

namespace tandem::cli {
Status run_default_job() {
  const int threads = default_threads();
  const std::string dir = user_cache_dir();
  const std::string path = dir + "/default-demo-q4_0.gguf";
  std::printf("tandem: no model given, so this runs the built-in default.\n");
  std::printf("NOTE: the default model has RANDOM weights (shape 'demo', ~60 M parameters, Q4_0) and the\n"
              "      Llama SentencePiece tokenizer, so the text below is noise; the speed is real.\n\n");
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return IoError(dir + ": cannot create the cache folder: " + ec.message());
  if (!std::filesystem::exists(path)) {
    std::printf("[1/3] building the default model at %s ...\n", path.c_str());
    GenModelOptions g;
    g.shape = *model_preset("demo");
    g.type = DType::Q4_0;
    g.vocab_path = data_dir() + "/vocab/llama-spm.gguf";
    g.n_threads = threads;
    ProgressBar bar("      writing");
    g.progress = [&bar](double f) { bar.update(f); };
    // The writer writes PATH.partial and renames it, so an interrupted run leaves no half model.
    TANDEM_RETURN_IF_ERROR(generate_model(g, path));
  } else {
    std::printf("[1/3] using the default model at %s\n", path.c_str());
  }
  TANDEM_ASSIGN_OR_RETURN(std::shared_ptr<Model> model, Model::load(path));

  const std::string prompt = "Once upon a time";
  std::printf("\n[2/3] tandem run -m %s -p \"%s\" -n 32 --seed 1\n%s", path.c_str(), prompt.c_str(), prompt.c_str());
  TANDEM_ASSIGN_OR_RETURN(std::unique_ptr<Session> session, Session::create(model, {threads, 256, 256}));
  GenerateOptions g;
  g.n_predict = 32;
  g.sampler.seed = 1;
  GenerateStats st;
  TANDEM_RETURN_IF_ERROR(session->generate(model->tokenizer().encode(prompt, true, true), g, [&](TokenId t) {
    std::cout << model->tokenizer().token_to_piece(t, false) << std::flush;
    return true;
  }, &st));
  std::printf("\n(%d tokens at %.1f tok/s)\n", st.n_generated,
              st.decode_seconds > 0 ? st.n_generated / st.decode_seconds : 0.0);

  std::printf("\n[3/3] tandem bench -m %s -p 128 -n 32 -r 3 -t %d\n", path.c_str(), threads);
  BenchOptions b;
  b.n_prompt = 128;
  b.n_gen = 32;
  b.reps = 3;
  b.threads = threads;
  ProgressBar bench_bar("      bench");
  b.progress = [&bench_bar](double f) { bench_bar.update(f); };
  TANDEM_ASSIGN_OR_RETURN(BenchResult r, run_bench(model, b));
  print_bench(*model, b, r, false, path);

  std::printf("\nTo run your own model (a GGUF of a llama, qwen2, qwen3, phi3, gemma2 or gemma3 model, f32/f16/bf16/q8_0/q4_0):\n"
              "  build/release/bin/tandem run -m YOUR_MODEL.gguf -p \"Your prompt\" -n 128\n"
              "  build/release/bin/tandem bench -m YOUR_MODEL.gguf\n"
              "or make a random model of a real shape:\n"
              "  build/release/bin/tandem gen-model --preset tinyllama-1.1b --type q4_0 -o tinyllama-q4_0.gguf\n");
  return Status::Ok();
}

}  // namespace tandem::cli
