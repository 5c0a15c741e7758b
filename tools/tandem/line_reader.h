// Reads the lines a person types into `tandem chat`: with line editing and history (libedit)
// when stdin is a terminal and tandem was built with it, else plain lines from stdin (a pipe, a
// file, a test).
#pragma once

#include <optional>
#include <string>

namespace tandem::cli {

class LineReader {
 public:
  LineReader();
  bool interactive() const { return interactive_; }
  // The next line without its newline; nullopt at end of input (Ctrl-D).
  std::optional<std::string> read(const char* prompt);

 private:
  bool interactive_ = false;
};

}  // namespace tandem::cli
