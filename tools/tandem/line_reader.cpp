#include "tools/tandem/line_reader.h"

#include <unistd.h>

#include <cstdlib>
#include <iostream>

#ifdef TANDEM_HAVE_LIBEDIT
#include <editline/readline.h>
#endif

namespace tandem::cli {

LineReader::LineReader() : interactive_(isatty(STDIN_FILENO) && isatty(STDOUT_FILENO)) {}

std::optional<std::string> LineReader::read(const char* prompt) {
#ifdef TANDEM_HAVE_LIBEDIT
  if (interactive_) {
    char* line = readline(prompt);
    if (!line) return std::nullopt;
    std::string s(line);
    std::free(line);
    if (!s.empty()) add_history(s.c_str());
    return s;
  }
#endif
  if (interactive_) std::cout << prompt << std::flush;
  std::string s;
  if (!std::getline(std::cin, s)) return std::nullopt;
  if (!s.empty() && s.back() == '\r') s.pop_back();
  return s;
}

}  // namespace tandem::cli
