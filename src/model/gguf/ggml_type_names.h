// Names of ggml tensor type ids, including the many tandem does not implement, so an
// "unsupported type" error can say "12 = q4_K" instead of a bare number.
#pragma once

#include <cstdint>
#include <string_view>

namespace tandem::gguf {

// The ggml name for a type id, or "" when the id is not (or no longer) a ggml type.
std::string_view ggml_type_name(uint32_t type_id);

}  // namespace tandem::gguf
