// libFuzzer target for the GGUF reader. Any input must either be rejected with a one-line message
// or produce a GgufFile whose every value and every tensor byte can be read; the sanitizers turn
// any out-of-bounds read into a crash, and the checks below turn broken invariants into one.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cmath>
#include <cstdlib>
#include <vector>
#include <algorithm>

#include "fuzz_check.h"
#include "model/arch.h"
#include "model/gguf/gguf.h"

namespace {

using namespace tandem;
using namespace tandem::gguf;

// Reads every part of a value, recursing into arrays, and folds it into a hash.
uint64_t touch(const Value& value) {
  uint64_t h = uint64_t(value.type());
  if (const Array* a = value.as_array()) {
    h += a->items.size() * 131 + uint64_t(a->type);
    for (const Value& item : a->items) {
      FUZZ_CHECK(item.type() == a->type);  // the reader keeps arrays homogeneous
      h = h * 31 + touch(item);
    }
  } else if (const std::string* s = value.as_string()) {
    for (char c : *s) h = h * 31 + uint8_t(c);
  } else if (const bool* b = value.as_bool()) {
    h += *b ? 1 : 2;
  } else if (auto i = value.as_int()) {
    h += uint64_t(*i);
  } else if (auto f = value.as_float()) {
    h += uint64_t(*f != *f ? 7 : 3);  // NaN-safe
  }
  return h;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto result = GgufFile::from_memory(data, size, "fuzz.gguf");
  if (!result.ok()) {
    const std::string& msg = result.status().message();
    FUZZ_CHECK(!msg.empty() && msg.find('\n') == std::string::npos && msg.rfind("fuzz.gguf: ", 0) == 0);
    return 0;
  }
  const GgufFile& file = **result;
  volatile uint64_t sink = 0;

  for (const auto& [key, value] : file.metadata()) {
    FUZZ_CHECK(file.find(key) == &value);
    sink = sink + touch(value);
    // Exercise the getters; they must agree with the stored type.
    FUZZ_CHECK(file.get_string(key).ok() == (value.as_string() != nullptr));
    FUZZ_CHECK(file.get_bool(key).ok() == (value.as_bool() != nullptr));
    FUZZ_CHECK(file.get_array(key).ok() == (value.as_array() != nullptr));
    (void)file.get_int(key);
    (void)file.get_float(key);
  }

  FUZZ_CHECK(file.alignment() != 0 && (file.alignment() & (file.alignment() - 1)) == 0);
  FUZZ_CHECK(file.data_offset() <= file.file_size());
  for (const TensorInfo& t : file.tensors()) {
    FUZZ_CHECK(file.find_tensor(t.name) == &t);
    FUZZ_CHECK(t.dims.size() >= 1 && t.dims.size() <= 4);
    FUZZ_CHECK(t.offset % file.alignment() == 0);
    FUZZ_CHECK(t.data >= data && t.data + t.n_bytes <= data + size);
    FUZZ_CHECK(t.n_bytes == row_bytes(t.type, t.n_elements()));
    uint64_t sum = 0;
    for (uint64_t i = 0; i < t.n_bytes; ++i) sum += t.data[i];
    sink = sink + sum;
  }

  // The hyperparameters a model loader reads from these keys: a one-line error naming the file,
  // or a configuration whose sizes every later stage may rely on.
  auto config = read_model_config(file);
  if (!config.ok()) {
    const std::string& msg = config.status().message();
    FUZZ_CHECK(!msg.empty() && msg.find('\n') == std::string::npos && msg.rfind("fuzz.gguf: ", 0) == 0);
    return 0;
  }
  const ModelConfig& c = *config;
  FUZZ_CHECK(c.dim > 0 && c.n_layers > 0 && c.n_heads > 0 && c.n_kv_heads > 0 && c.n_heads % c.n_kv_heads == 0);
  FUZZ_CHECK(c.head_dim > 0 && c.head_dim % 2 == 0 && c.ffn_dim > 0 && c.n_vocab > 0);
  FUZZ_CHECK(c.sliding_window >= 0 && c.attn_softcap >= 0 && c.final_softcap >= 0 && c.query_scale > 0 &&
             std::isfinite(c.query_scale) && std::isfinite(c.embedding_scale));
  for (const std::vector<float>* f : {&c.rope_freq_factors, &c.rope_long_factors})
    FUZZ_CHECK(f->empty() || f->size() == size_t(c.head_dim / 2));
  for (int l = 0; l < std::min(c.n_layers, 64); ++l) sink = sink + uint64_t(c.window_of_layer(l));
  std::vector<float> cos(size_t(c.head_dim / 2)), sin(cos.size());
  for (bool local : {false, true}) fill_rope_tables(rope_params(c, local, c.context_length), c.head_dim, 1, 7, cos.data(), sin.data());
  return 0;
}
