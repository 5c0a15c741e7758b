#include "core/file_io.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <mutex>

namespace tandem {
namespace {

std::string errno_text(int err) {
  // EFBIG: the process's file size limit (RLIMIT_FSIZE, `ulimit -f`), or the file system's largest file.
  if (err == EFBIG) return "file size limit exceeded: ulimit -f, or the largest file the file system holds";
  return std::strerror(err);
}

// A write past RLIMIT_FSIZE raises SIGXFSZ, whose default action ends the process on the spot: no
// destructor runs and the temporary stays behind as PATH.partial-PID-N. While any output is open
// the signal is ignored, so that write() fails with EFBIG and the output cleans up and says why.
// The default comes back when the last output closes, so the process's other writes (stdout) end
// it as before; a disposition the program chose itself (a handler, SIG_IGN) is left alone.
std::mutex file_size_signal_mutex;
int outputs_open = 0;
bool file_size_signal_ignored = false;

void hold_file_size_signal() {
  std::lock_guard<std::mutex> lock(file_size_signal_mutex);
  if (outputs_open++ > 0) return;
  struct sigaction old {};
  if (::sigaction(SIGXFSZ, nullptr, &old) != 0 || (old.sa_flags & SA_SIGINFO) || old.sa_handler != SIG_DFL) return;
  struct sigaction ignore {};
  ignore.sa_handler = SIG_IGN;
  sigemptyset(&ignore.sa_mask);
  file_size_signal_ignored = ::sigaction(SIGXFSZ, &ignore, nullptr) == 0;
}

void release_file_size_signal() {
  std::lock_guard<std::mutex> lock(file_size_signal_mutex);
  if (--outputs_open > 0 || !file_size_signal_ignored) return;
  struct sigaction dfl {};
  dfl.sa_handler = SIG_DFL;
  sigemptyset(&dfl.sa_mask);
  ::sigaction(SIGXFSZ, &dfl, nullptr);
  file_size_signal_ignored = false;
}

// What a stat mode is, for errors about a file that is not a regular one.
const char* kind_of(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  return "not a regular file";
}

std::string folder_of(const std::string& path) {
  const size_t slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

}  // namespace

Result<std::string> read_regular_file(const std::string& path, size_t max_bytes, const std::string& what) {
  // O_NONBLOCK: opening a FIFO for reading would otherwise wait for a writer forever.
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) {
    const int err = errno;
    const std::string msg = path + ": cannot open " + what + " (" + errno_text(err) + ")";
    return err == ENOENT ? NotFound(msg) : IoError(msg);
  }
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{fd};
  struct stat st;
  if (::fstat(fd, &st) != 0) return IoError(path + ": cannot stat " + what + " (" + errno_text(errno) + ")");
  if (!S_ISREG(st.st_mode))
    return InvalidArgument(path + ": " + what + " is " + kind_of(st.st_mode) + ", not a regular file");
  if (uint64_t(st.st_size) > max_bytes) {
    return InvalidArgument(path + ": " + what + " is " + std::to_string(st.st_size) + " bytes, more than the " +
                           std::to_string(max_bytes) + " such a file can be");
  }
  std::string bytes;
  bytes.reserve(size_t(st.st_size));
  char chunk[1 << 16];
  while (true) {
    const ssize_t n = ::read(fd, chunk, sizeof chunk);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return IoError(path + ": cannot read " + what + " (" + errno_text(errno) + ")");
    if (n == 0) break;
    if (bytes.size() + size_t(n) > max_bytes) {  // grew while being read
      return InvalidArgument(path + ": " + what + " grew past " + std::to_string(max_bytes) +
                             " bytes while being read");
    }
    bytes.append(chunk, size_t(n));
  }
  return bytes;
}

Status check_output_path(const std::string& path, const std::string& what) {
  if (path.empty()) return InvalidArgument(what + ": the output path is empty");
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) {
    if (errno == ENOENT) return Status::Ok();
    return IoError(path + ": cannot write " + what + " (" + errno_text(errno) + ")");
  }
  if (!S_ISREG(st.st_mode)) {
    return InvalidArgument(path + ": is " + std::string(kind_of(st.st_mode)) + "; " + what +
                           " is written only as a new or a regular file");
  }
  return Status::Ok();
}

Result<AtomicOutput> AtomicOutput::create(const std::string& path, const std::string& what) {
  TANDEM_RETURN_IF_ERROR(check_output_path(path, what));
  // Through a symlink the temporary goes beside the file it names, so rename() replaces that file
  // (and not the link) within one file system.
  std::string target = path;
  if (char* resolved = ::realpath(path.c_str(), nullptr)) {
    target = resolved;
    std::free(resolved);
  }
  static std::atomic<unsigned> counter{0};
  const std::string tmp = target + ".partial-" + std::to_string(::getpid()) + "-" + std::to_string(counter++);
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);  // the umask applies
  if (fd < 0) {
    return IoError(path + ": cannot create " + what + " (" + errno_text(errno) + " in " + folder_of(target) + ")");
  }
  return AtomicOutput(target, tmp, what, fd);
}

AtomicOutput::AtomicOutput(std::string path, std::string tmp, std::string what, int fd)
    : path_(std::move(path)), tmp_(std::move(tmp)), what_(std::move(what)), fd_(fd), holds_signal_(true) {
  hold_file_size_signal();
}

AtomicOutput::AtomicOutput(AtomicOutput&& o) noexcept
    : path_(std::move(o.path_)),
      tmp_(std::move(o.tmp_)),
      what_(std::move(o.what_)),
      fd_(o.fd_),
      committed_(o.committed_),
      holds_signal_(o.holds_signal_) {
  o.fd_ = -1;
  o.committed_ = true;  // the moved-from object owns no temporary file
  o.holds_signal_ = false;
}

AtomicOutput::~AtomicOutput() {
  if (fd_ >= 0) ::close(fd_);
  if (!committed_) ::unlink(tmp_.c_str());
  if (holds_signal_) release_file_size_signal();
}

Status AtomicOutput::fail(const std::string& step, int err) {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
  return IoError(path_ + ": " + step + " " + what_ + " failed (" + errno_text(err) + ")");
}

Status AtomicOutput::write(const void* data, size_t n) {
  if (fd_ < 0) return IoError(path_ + ": " + what_ + " is closed");
  const char* p = static_cast<const char*>(data);
  while (n > 0) {
    const ssize_t w = ::write(fd_, p, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return fail("writing", w < 0 ? errno : ENOSPC);
    p += w;
    n -= size_t(w);
  }
  return Status::Ok();
}

Status AtomicOutput::commit() {
  if (fd_ < 0) return IoError(path_ + ": " + what_ + " is closed");
  if (::fsync(fd_) != 0) return fail("flushing", errno);
  if (::close(fd_) != 0) {
    fd_ = -1;
    return fail("closing", errno);
  }
  fd_ = -1;
  // Checked again: the target may have become something else while the output was written.
  TANDEM_RETURN_IF_ERROR(check_output_path(path_, what_));
  if (::rename(tmp_.c_str(), path_.c_str()) != 0) return fail("renaming", errno);
  committed_ = true;
  // The rename itself reaches the disk with the folder's entry.
  const int dir = ::open(folder_of(path_).c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir >= 0) {
    ::fsync(dir);
    ::close(dir);
  }
  return Status::Ok();
}

Status write_file_atomically(const std::string& path, std::string_view bytes, const std::string& what) {
  TANDEM_ASSIGN_OR_RETURN(AtomicOutput out, AtomicOutput::create(path, what));
  TANDEM_RETURN_IF_ERROR(out.write(bytes));
  return out.commit();
}

}  // namespace tandem
