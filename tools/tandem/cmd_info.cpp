#include <cstdio>

#include "model/gguf/gguf.h"
#include "model/model.h"
#include "tools/tandem/commands.h"

namespace tandem::cli {
namespace {

std::string value_summary(const gguf::Value& v) {
  if (const std::string* s = v.as_string()) return s->size() > 60 ? "\"" + s->substr(0, 57) + "...\"" : "\"" + *s + "\"";
  if (const gguf::Array* a = v.as_array()) return "[" + std::string(gguf::value_type_name(a->type)) + " x " + std::to_string(a->items.size()) + "]";
  if (const bool* b = v.as_bool()) return *b ? "true" : "false";
  if (auto i = v.as_int()) return std::to_string(*i);
  if (auto f = v.as_float()) return std::to_string(*f);
  return "?";
}

}  // namespace

Command add_info(CLI::App& app) {
  struct Opts {
    std::string model;
    bool all_metadata = false;
  };
  auto o = std::make_shared<Opts>();
  CLI::App* sub = app.add_subcommand("info", "Show a model's architecture, hyperparameters, tokenizer and tensors");
  sub->add_option("-m,--model", o->model, "GGUF model file")->required();
  sub->add_flag("--metadata", o->all_metadata, "also list every metadata key");
  return {sub, [o]() -> Status {
            TANDEM_ASSIGN_OR_RETURN(std::shared_ptr<Model> model, Model::load(o->model));
            const gguf::GgufFile& f = model->file();
            const ModelConfig& c = model->config();
            const VocabData& v = model->tokenizer().vocab();
            std::printf("file:          %s (GGUF v%u, %zu bytes, %zu tensors, %zu metadata keys)\n", f.path().c_str(),
                        f.version(), f.file_size(), f.tensors().size(), f.metadata().size());
            std::printf("architecture:  %s%s\n", c.arch_name.c_str(), c.name.empty() ? "" : ("  (" + c.name + ")").c_str());
            std::printf("params:        %.2f M in %.2f MiB, mostly %s\n", double(model->n_params()) / 1e6,
                        double(model->weight_bytes()) / 1048576.0, model->weight_type_summary().c_str());
            std::printf("hyperparams:   %s\n", c.describe().c_str());
            std::printf("tokenizer:     %s (pre '%s'), %d tokens, %zu merges, bos %d, eos %d, add_bos %s, add_eos %s\n",
                        v.model.c_str(), v.pre.empty() ? "default" : v.pre.c_str(), model->tokenizer().n_vocab(),
                        v.merges.size(), v.bos, v.eos, v.add_bos ? "yes" : "no", v.add_eos ? "yes" : "no");
            if (o->all_metadata) {
              std::printf("\n%-48s %s\n", "key", "value");
              for (const auto& [key, value] : f.metadata())
                std::printf("%-48s %s\n", key.c_str(), value_summary(value).c_str());
            }
            std::printf("\n%-32s %-6s %-22s %12s\n", "tensor", "type", "shape", "bytes");
            for (const gguf::TensorInfo& t : f.tensors()) {
              std::string shape = "[";
              for (size_t i = 0; i < t.dims.size(); ++i) shape += (i ? ", " : "") + std::to_string(t.dims[i]);
              shape += "]";
              std::printf("%-32s %-6s %-22s %12llu\n", t.name.c_str(), std::string(dtype_name(t.type)).c_str(),
                          shape.c_str(), (unsigned long long)t.n_bytes);
            }
            return Status::Ok();
          }};
}

}  // namespace tandem::cli
