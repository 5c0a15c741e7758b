// Facts of the GGUF format (version 3) that its parser and its writer both hold to.
#pragma once

#include <cstdint>
#include <string>
#include <system_error>

namespace tandem::gguf {

inline constexpr uint64_t kDefaultAlignment = 32;  // of the tensor data, when general.alignment is absent
inline constexpr uint32_t kMaxDims = 4;            // ggml tensors have at most 4 dimensions
inline constexpr uint64_t kMaxNameBytes = 64;      // the GGUF spec's limit on tensor names

// The text of an errno value, for the one-line errors of the reader and the writer.
inline std::string errno_text(int err) { return std::generic_category().message(err); }

}  // namespace tandem::gguf
