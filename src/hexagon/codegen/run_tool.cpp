#include "hexagon/codegen/run_tool.h"

#include <cstdio>
#include <cstdlib>
#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

extern char** environ;

namespace tandem::hexagon {

Status run_tool(const std::vector<std::string>& argv) {
  if (argv.empty()) return InvalidArgument("run_tool: no program");
  // Diagnostics go to an unlinked temporary file, read back on failure.
  char log_path[] = "/tmp/tandem-hexagon-tool-XXXXXX";
  const int log = mkstemp(log_path);
  if (log < 0) return IoError("cannot create a temporary file for " + argv[0] + "'s diagnostics");
  unlink(log_path);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, log, 2);
  posix_spawn_file_actions_adddup2(&actions, log, 1);
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = -1;
  const int err = posix_spawn(&pid, argv[0].c_str(), &actions, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (err != 0) {
    close(log);
    return IoError("cannot run " + argv[0] + ": " + std::to_string(err));
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
  }
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) {
    close(log);
    return Status::Ok();
  }
  std::string text(4096, '\0');
  const ssize_t got = pread(log, text.data(), text.size(), 0);
  close(log);
  text.resize(got > 0 ? size_t(got) : 0);
  const std::string how = WIFEXITED(status) ? "exited with status " + std::to_string(WEXITSTATUS(status))
                                            : "ended by signal " + std::to_string(WTERMSIG(status));
  return Internal(argv[0] + " " + how + (text.empty() ? std::string() : ":\n" + text));
}

}  // namespace tandem::hexagon
