// A one-line progress bar on stderr for long work; silent when stderr is not a terminal, so
// logs and pipes stay clean.
#pragma once

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <string>

namespace tandem::cli {

class ProgressBar {
 public:
  explicit ProgressBar(std::string label) : label_(std::move(label)), enabled_(isatty(2) != 0) {}

  void update(double fraction) {
    if (!enabled_) return;
    const int width = 40;
    const int filled = int(fraction * width + 0.5);
    const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
    std::fprintf(stderr, "\r%s [%s%s] %3d%% %.1fs", label_.c_str(), std::string(size_t(filled), '#').c_str(),
                 std::string(size_t(width - filled), '.').c_str(), int(fraction * 100 + 0.5), secs);
    if (fraction >= 1.0) std::fprintf(stderr, "\n");
    std::fflush(stderr);
  }

 private:
  std::string label_;
  bool enabled_;
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
};

}  // namespace tandem::cli
