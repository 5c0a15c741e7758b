// The text a generation streams out, piece by piece: only whole UTF-8 characters leave (a token
// may end inside one, and JSON cannot carry half a character), and text that might be the start
// of a stop string is held back until it is known not to be one. When a stop string appears, the
// text before it is the last that leaves.
#pragma once

#include <string>
#include <vector>

namespace tandem::server {

class TextStream {
 public:
  explicit TextStream(std::vector<std::string> stop = {});

  // Takes the next token's bytes; returns the text that may be sent now (possibly empty).
  std::string push(const std::string& piece);
  // The end of the generation: what was held back (an unfinished character becomes U+FFFD).
  std::string finish();

  bool stopped() const { return stopped_; }          // a stop string appeared; push() returns nothing more
  const std::string& text() const { return sent_; }  // everything returned so far

 private:
  std::string release(size_t n);  // sends the first n held bytes

  std::vector<std::string> stop_;
  std::string held_;  // received, not yet sent
  std::string sent_;
  bool stopped_ = false;
};

// How many bytes at the end of `s` are an unfinished UTF-8 character (0 when it ends whole).
size_t unfinished_utf8_tail(const std::string& s);

// `s` with every invalid UTF-8 sequence replaced by U+FFFD (model output may hold stray bytes).
std::string valid_utf8(const std::string& s);

}  // namespace tandem::server
