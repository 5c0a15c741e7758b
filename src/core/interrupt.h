// Ctrl-C (SIGINT) and SIGTERM for commands that hold work worth saving or cleaning up.
//
// Outside an InterruptScope both signals keep their default action: the process ends at once,
// which is right while it holds nothing (loading a model, profiling into memory). Inside a scope
// the first signal only raises a flag that the work polls (interrupted()) at safe points, so it
// can flush the tokens it generated, remove its temporary files and return; main() then exits
// 128 + the signal (130 for SIGINT, 143 for SIGTERM), as a shell reports a process the signal
// killed. A second signal ends the process at once, for work that does not poll.
#pragma once

namespace tandem {

// Installs the handlers (once, from main; later calls do nothing).
void install_interrupt_handlers();

// Defers SIGINT/SIGTERM to the flag while alive. Scopes nest.
class InterruptScope {
 public:
  InterruptScope();
  ~InterruptScope();
  InterruptScope(const InterruptScope&) = delete;
  InterruptScope& operator=(const InterruptScope&) = delete;
};

// Whether a deferred signal arrived; the signal (SIGINT or SIGTERM), or 0.
bool interrupted();
int interrupt_signal();
// Forgets a deferred signal: an interactive session stops the generation it interrupted and
// goes on (tandem chat).
void clear_interrupt();

}  // namespace tandem
