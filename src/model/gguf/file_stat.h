// What tells an open model file from the same path changed on disk: size and modification time.
// The reader stamps a file with them when it opens it; release_resident() compares before it maps
// the file's pages over a copy of them.
#pragma once

#include <sys/stat.h>

#include <cstdint>

namespace tandem::gguf {

inline int64_t mtime_ns(const struct stat& st) {
  return int64_t(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec;
}

}  // namespace tandem::gguf
