#include "model/gguf/ggml_type_names.h"

#include <array>

namespace tandem::gguf {

std::string_view ggml_type_name(uint32_t type_id) {
  // Indexed by ggml's type id (a file-format constant); gaps are ids ggml retired.
  static constexpr std::array<std::string_view, 40> kNames = {
      "f32",     "f16",    "q4_0",    "q4_1",  "",      "",       "q5_0",  "q5_1",
      "q8_0",    "q8_1",   "q2_K",    "q3_K",  "q4_K",  "q5_K",   "q6_K",  "q8_K",
      "iq2_xxs", "iq2_xs", "iq3_xxs", "iq1_s", "iq4_nl", "iq3_s", "iq2_s", "iq4_xs",
      "i8",      "i16",    "i32",     "i64",   "f64",   "iq1_m",  "bf16",  "",
      "",        "",       "tq1_0",   "tq2_0", "",      "",       "",      "mxfp4",
  };
  return type_id < kNames.size() ? kNames[type_id] : std::string_view();
}

}  // namespace tandem::gguf
