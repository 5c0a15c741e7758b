// SHA-256 (OpenSSL EVP) of bytes and of files, as lowercase hex.
#pragma once

#include <cstddef>
#include <string>

#include "core/status.h"

namespace tandem::compile_cache {

std::string sha256_hex(const void* data, size_t bytes);
inline std::string sha256_hex(const std::string& s) { return sha256_hex(s.data(), s.size()); }
// Streams the file (models are GBs); the error names the file.
Result<std::string> sha256_file(const std::string& path);

}  // namespace tandem::compile_cache
