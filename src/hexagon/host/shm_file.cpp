#include "hexagon/host/shm_file.h"

#include <atomic>
#include <cerrno>
#include <cstring>
#include <random>
#include <utility>

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

namespace tandem::hexagon {

Result<ShmFile> ShmFile::create(size_t bytes) {
  static std::atomic<uint32_t> counter{0};
  const size_t page = size_t(sysconf(_SC_PAGESIZE));
  bytes = (bytes + page - 1) / page * page;
  std::random_device rd;
  for (int attempt = 0; attempt < 16; ++attempt) {
    ShmFile f;
    f.path_ = "/dev/shm/tandem-hexagon-" + std::to_string(getpid()) + "-" + std::to_string(counter++) + "-" +
              std::to_string(rd());
    const int fd = open(f.path_.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd < 0 && errno == EEXIST) continue;
    if (fd < 0) return IoError("hexagon: cannot create " + f.path_ + ": " + std::strerror(errno));
    f.linked_ = true;
    if (ftruncate(fd, off_t(bytes)) != 0) {
      const int e = errno;
      close(fd);
      return IoError("hexagon: cannot size " + f.path_ + " to " + std::to_string(bytes) + " bytes: " + std::strerror(e));
    }
    void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    const int e = errno;
    close(fd);
    if (p == MAP_FAILED) return IoError("hexagon: cannot map " + f.path_ + ": " + std::strerror(e));
    f.data_ = static_cast<uint8_t*>(p);
    f.size_ = bytes;
    return f;
  }
  return IoError("hexagon: no free name for a shared file under /dev/shm");
}

ShmFile::ShmFile(ShmFile&& o) noexcept
    : path_(std::move(o.path_)), data_(std::exchange(o.data_, nullptr)), size_(std::exchange(o.size_, 0)),
      linked_(std::exchange(o.linked_, false)) {}

ShmFile& ShmFile::operator=(ShmFile&& o) noexcept {
  if (this != &o) {
    release();
    path_ = std::move(o.path_);
    data_ = std::exchange(o.data_, nullptr);
    size_ = std::exchange(o.size_, 0);
    linked_ = std::exchange(o.linked_, false);
  }
  return *this;
}

ShmFile::~ShmFile() { release(); }

void ShmFile::unlink() {
  if (linked_) ::unlink(path_.c_str());
  linked_ = false;
}

void ShmFile::release() {
  if (data_) munmap(data_, size_);
  data_ = nullptr;
  unlink();
}

}  // namespace tandem::hexagon
