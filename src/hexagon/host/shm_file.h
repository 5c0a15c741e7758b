// A file under /dev/shm mapped MAP_SHARED: the memory the host and the DSP process share.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "core/status.h"

namespace tandem::hexagon {

class ShmFile {
 public:
  // A new file of `bytes` (rounded up to whole pages) with a name no other file has
  // (tandem-hexagon-<pid>-<counter>-<random>, created O_EXCL, mode 0600), zero-filled and mapped.
  static Result<ShmFile> create(size_t bytes);

  ShmFile(ShmFile&& o) noexcept;
  ShmFile& operator=(ShmFile&& o) noexcept;
  ShmFile(const ShmFile&) = delete;
  ShmFile& operator=(const ShmFile&) = delete;
  ~ShmFile();  // unmaps and unlinks

  const std::string& path() const { return path_; }
  uint8_t* data() const { return data_; }
  size_t size() const { return size_; }
  // Removes the name (the mappings stay); once the DSP has mapped the file nothing else needs
  // it, and a crash then leaves nothing behind in /dev/shm.
  void unlink();

 private:
  ShmFile() = default;
  void release();
  std::string path_;
  uint8_t* data_ = nullptr;
  size_t size_ = 0;
  bool linked_ = false;
};

}  // namespace tandem::hexagon
