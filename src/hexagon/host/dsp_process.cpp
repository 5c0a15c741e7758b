#include "hexagon/host/dsp_process.h"

#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstring>
#include <string_view>
#include <thread>
#include <utility>

#include <spawn.h>
#include <sys/wait.h>

extern char** environ;

namespace tandem::hexagon {

Result<DspProcess> DspProcess::spawn(const std::vector<std::string>& argv, const std::vector<std::string>& drop_env) {
  if (argv.empty()) return InvalidArgument("hexagon: no program to run");
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  std::vector<char*> env;
  for (char** e = environ; *e; ++e) {
    const std::string_view entry(*e);
    bool drop = false;
    for (const std::string& name : drop_env)
      drop = drop || (entry.size() > name.size() && entry.compare(0, name.size(), name) == 0 && entry[name.size()] == '=');
    if (!drop) env.push_back(*e);
  }
  env.push_back(nullptr);
  DspProcess p;
  const int err = posix_spawn(&p.pid_, args[0], nullptr, nullptr, args.data(), env.data());
  if (err != 0) {
    p.pid_ = -1;
    return IoError("hexagon: cannot start " + argv[0] + ": " + std::strerror(err));
  }
  return p;
}

DspProcess::DspProcess(DspProcess&& o) noexcept : pid_(std::exchange(o.pid_, -1)), exit_(std::move(o.exit_)) {}

DspProcess& DspProcess::operator=(DspProcess&& o) noexcept {
  if (this != &o) {
    kill_and_reap();
    pid_ = std::exchange(o.pid_, -1);
    exit_ = std::move(o.exit_);
  }
  return *this;
}

DspProcess::~DspProcess() { kill_and_reap(); }

void DspProcess::record(int wstatus) {
  if (WIFSIGNALED(wstatus)) {
    const int sig = WTERMSIG(wstatus);
    const char* name = sigdescr_np(sig);
    exit_ = "exited with signal " + std::to_string(sig) + (name ? std::string(" (") + name + ")" : "");
  } else {
    exit_ = "exited with status " + std::to_string(WEXITSTATUS(wstatus));
  }
  pid_ = -1;
}

std::optional<std::string> DspProcess::poll_exit() {
  if (pid_ < 0) return exit_ ? exit_ : std::optional<std::string>("was never started");
  int wstatus = 0;
  const pid_t r = waitpid(pid_, &wstatus, WNOHANG);
  if (r == pid_) {
    record(wstatus);
  } else if (r < 0 && errno == ECHILD) {  // reaped elsewhere (SIGCHLD ignored by the program)
    exit_ = "exited (its status was collected elsewhere)";
    pid_ = -1;
  }
  return pid_ < 0 ? exit_ : std::nullopt;
}

bool DspProcess::wait_exit(int ms) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(ms);
  while (!poll_exit()) {
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
  return true;
}

void DspProcess::kill_and_reap() {
  if (pid_ < 0) return;
  if (poll_exit()) return;
  kill(pid_, SIGKILL);
  int wstatus = 0;
  pid_t r;
  do r = waitpid(pid_, &wstatus, 0);
  while (r < 0 && errno == EINTR);
  if (r == pid_) record(wstatus);
  pid_ = -1;
}

}  // namespace tandem::hexagon
