#include "tests/devices/conformance_models.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <unistd.h>

#include "model/gen_model.h"
#include "tests/model/test_models.h"

namespace tandem::devices {

std::string model_key(Arch arch, DType type) { return arch_name(arch) + "-" + std::string(dtype_name(type)); }

std::string conformance_model_path(const std::string& key) {
  for (Arch arch : {Arch::kLlama, Arch::kQwen2})
    for (DType t : {DType::F32, DType::F16, DType::BF16, DType::Q8_0, DType::Q4_0})
      if (key == model_key(arch, t)) return testing::small_model_path(arch, t);
  EXPECT_EQ(key, "wide-f16") << "unknown conformance model";
  static std::string wide;
  if (!wide.empty()) return wide;
  const std::string& dir = testing::process_temp_dir();
  GenModelOptions o;
  o.shape = ModelShape{"custom", Arch::kLlama, 256, 1, 4, 2, 512, 256, 10000.0f, 1e-5f, false, 0.0f};
  o.type = DType::F16;
  o.seed = 99;
  o.n_threads = 2;
  o.vocab_path = testing::repo_vocab();
  const std::string path = dir + "/wide-f16.gguf";
  const Status st = generate_model(o, path);
  EXPECT_TRUE(st.ok()) << st.message();
  wide = path;
  return wide;
}

}  // namespace tandem::devices
