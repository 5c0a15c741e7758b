// The DSP process as a child of the host: started with posix_spawn, watched without blocking,
// killed and reaped at the end.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <sys/types.h>

#include "core/status.h"

namespace tandem::hexagon {

class DspProcess {
 public:
  // Runs argv[0] with argv, in this process's environment less the variables named in
  // `drop_env`. posix_spawn rather than fork + exec: the host has threads (device workers,
  // gtest's), and posix_spawn does the async-signal-safe child work for us (glibc's is a
  // CLONE_VFORK, which also skips copying a sanitizer-sized address space).
  static Result<DspProcess> spawn(const std::vector<std::string>& argv, const std::vector<std::string>& drop_env = {});

  DspProcess(DspProcess&& o) noexcept;
  DspProcess& operator=(DspProcess&& o) noexcept;
  DspProcess(const DspProcess&) = delete;
  DspProcess& operator=(const DspProcess&) = delete;
  ~DspProcess();  // kill_and_reap()

  pid_t pid() const { return pid_; }

  // nullopt while the child runs; once it has ended (reaped here, by waitpid WNOHANG), how:
  // "exited with status 3", "exited with signal 9 (Killed)".
  std::optional<std::string> poll_exit();

  // Waits up to `ms` for the child to end by itself; true if it did (reaped).
  bool wait_exit(int ms);

  // SIGKILL and waitpid; nothing if it already ended.
  void kill_and_reap();

 private:
  DspProcess() = default;
  void record(int wstatus);
  pid_t pid_ = -1;
  std::optional<std::string> exit_;
};

}  // namespace tandem::hexagon
