// Files tandem reads from users and files it writes for them.
//
// Reading: only regular files, up to a size bound, opened so that a FIFO or a device never blocks
// or streams forever. Writing: an output goes to a temporary file beside its target, is flushed to
// disk (fsync) and renamed over the target, so a reader never sees half a file and an interrupted
// or failed write (a full disk) leaves the old file, or none. Outputs replace only regular files:
// never a device node, a FIFO or a directory.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "core/status.h"

namespace tandem {

// The whole of a regular file of at most max_bytes. Errors name the path and `what` the file is:
// missing (NotFound), not a regular file, larger than the bound, unreadable.
Result<std::string> read_regular_file(const std::string& path, size_t max_bytes, const std::string& what);

// Ok when tandem may write `path`: it does not exist, or it (or what its symlink names) is a
// regular file. The error names the path and what is there instead.
Status check_output_path(const std::string& path, const std::string& what);

// One output written atomically: create() checks the path and opens PATH.partial-PID-N in the
// target's folder; commit() flushes it to disk and renames it over PATH. Destroying it without a
// successful commit() removes the temporary file. A write past the file size limit (`ulimit -f`)
// fails ("file size limit exceeded") instead of killing the process with SIGXFSZ, which would
// leave the temporary behind: while an output is open, that signal is ignored.
class AtomicOutput {
 public:
  static Result<AtomicOutput> create(const std::string& path, const std::string& what);
  AtomicOutput(AtomicOutput&& other) noexcept;
  AtomicOutput& operator=(AtomicOutput&&) = delete;
  ~AtomicOutput();

  Status write(const void* data, size_t n);
  Status write(std::string_view bytes) { return write(bytes.data(), bytes.size()); }
  Status commit();
  const std::string& temporary_path() const { return tmp_; }

 private:
  AtomicOutput(std::string path, std::string tmp, std::string what, int fd);
  Status fail(const std::string& step, int err);

  std::string path_, tmp_, what_;
  int fd_ = -1;
  bool committed_ = false;
  bool holds_signal_ = false;  // this output counts toward SIGXFSZ being ignored (file_io.cpp)
};

// create() + write() + commit() of one buffer.
Status write_file_atomically(const std::string& path, std::string_view bytes, const std::string& what);

}  // namespace tandem
