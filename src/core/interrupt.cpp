#include "core/interrupt.h"

#include <atomic>
#include <csignal>

namespace tandem {
namespace {

// Lock-free atomics are async-signal-safe; the handler reads and writes nothing else.
std::atomic<int> g_scopes{0};
std::atomic<int> g_signal{0};
static_assert(std::atomic<int>::is_always_lock_free);

extern "C" void on_interrupt(int sig) {
  if (g_scopes.load() == 0 || g_signal.load() != 0) {
    // No work to save, or the second signal: the default action (the process ends with the
    // signal once the handler returns and the signal is unblocked).
    std::signal(sig, SIG_DFL);
    std::raise(sig);
    return;
  }
  g_signal.store(sig);
}

}  // namespace

void install_interrupt_handlers() {
  static const bool installed = [] {
    for (int sig : {SIGINT, SIGTERM}) {
      struct sigaction old = {};
      sigaction(sig, nullptr, &old);
      if (old.sa_handler == SIG_IGN) continue;  // started ignoring it (nohup, a background job): keep to that
      struct sigaction sa = {};
      sa.sa_handler = on_interrupt;
      sigemptyset(&sa.sa_mask);
      sa.sa_flags = SA_RESTART;  // reads and writes in progress continue; the work polls the flag
      sigaction(sig, &sa, nullptr);
    }
    return true;
  }();
  (void)installed;
}

InterruptScope::InterruptScope() { g_scopes.fetch_add(1); }
InterruptScope::~InterruptScope() { g_scopes.fetch_sub(1); }

bool interrupted() { return g_signal.load() != 0; }
int interrupt_signal() { return g_signal.load(); }
void clear_interrupt() { g_signal.store(0); }

}  // namespace tandem
