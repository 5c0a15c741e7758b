#include "model/gguf/mapping_guard.h"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <mutex>

namespace tandem::gguf {
namespace {

// A fixed table the handler can read without locks or allocation. A slot is published by storing
// its end last (release) and retired by clearing its end first.
struct Slot {
  std::atomic<uintptr_t> begin{0}, end{0};
  char path[480] = {};
};
constexpr int kSlots = 32;
Slot g_slots[kSlots];
std::mutex g_slots_mu;  // registration only; the handler never takes it
struct sigaction g_previous;

// Async-signal-safe output: write(2) of fixed text and decimal numbers.
void put(const char* s) {
  size_t n = std::strlen(s);
  while (n > 0) {
    const ssize_t w = ::write(STDERR_FILENO, s, n);
    if (w <= 0) return;
    s += w;
    n -= size_t(w);
  }
}

void put_number(uintptr_t v) {
  char digits[24];
  int i = sizeof digits - 1;
  digits[i] = '\0';
  do {
    digits[--i] = char('0' + v % 10);
    v /= 10;
  } while (v != 0 && i > 0);
  put(digits + i);
}

extern "C" void on_sigbus(int sig, siginfo_t* info, void* context) {
  const uintptr_t addr = reinterpret_cast<uintptr_t>(info->si_addr);
  for (const Slot& s : g_slots) {
    const uintptr_t end = s.end.load(std::memory_order_acquire), begin = s.begin.load(std::memory_order_relaxed);
    if (end == 0 || addr < begin || addr >= end) continue;
    put("tandem: error: ");
    put(s.path);
    put(": the file changed on disk while tandem was using it (truncated or rewritten in place; byte ");
    put_number(addr - begin);
    put(" is gone); leave a model file alone while it runs, or load it with --no-mmap\n");
    ::_exit(1);
  }
  // Not ours: what was there before decides (returning re-runs the faulting access under it).
  if (g_previous.sa_flags & SA_SIGINFO) {
    if (g_previous.sa_sigaction) return g_previous.sa_sigaction(sig, info, context);
  } else if (g_previous.sa_handler != SIG_DFL && g_previous.sa_handler != SIG_IGN) {
    return g_previous.sa_handler(sig);
  }
  ::signal(SIGBUS, SIG_DFL);
}

void install_once() {
  static const bool installed = [] {
    struct sigaction sa = {};
    sa.sa_sigaction = on_sigbus;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_SIGINFO;
    sigaction(SIGBUS, &sa, &g_previous);
    return true;
  }();
  (void)installed;
}

}  // namespace

int guard_mapping(const void* begin, size_t size, const std::string& path) {
  if (!begin || size == 0) return -1;
  install_once();
  std::lock_guard<std::mutex> lock(g_slots_mu);
  for (int i = 0; i < kSlots; ++i) {
    Slot& s = g_slots[i];
    if (s.end.load(std::memory_order_relaxed) != 0) continue;
    const size_t n = std::min(path.size(), sizeof s.path - 1);
    std::memcpy(s.path, path.data(), n);
    s.path[n] = '\0';
    s.begin.store(reinterpret_cast<uintptr_t>(begin), std::memory_order_relaxed);
    s.end.store(reinterpret_cast<uintptr_t>(begin) + size, std::memory_order_release);
    return i;
  }
  return -1;
}

void unguard_mapping(int slot) {
  if (slot < 0 || slot >= kSlots) return;
  std::lock_guard<std::mutex> lock(g_slots_mu);
  g_slots[slot].end.store(0, std::memory_order_release);
}

}  // namespace tandem::gguf
