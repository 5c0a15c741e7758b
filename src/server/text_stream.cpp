#include "server/text_stream.h"

#include <algorithm>

namespace tandem::server {
namespace {

// The length a UTF-8 sequence starting with `lead` has (0: not a lead byte).
size_t sequence_length(unsigned char lead) {
  if (lead < 0x80) return 1;
  if (lead >= 0xC2 && lead <= 0xDF) return 2;
  if (lead >= 0xE0 && lead <= 0xEF) return 3;
  if (lead >= 0xF0 && lead <= 0xF4) return 4;
  return 0;
}

bool continuation(unsigned char c) { return (c & 0xC0) == 0x80; }

// Whether bytes [i, i + n) of s are a valid sequence of length n (no overlong or surrogate forms).
bool valid_sequence(const std::string& s, size_t i, size_t n) {
  const auto b = [&](size_t k) { return static_cast<unsigned char>(s[i + k]); };
  for (size_t k = 1; k < n; ++k)
    if (!continuation(b(k))) return false;
  if (n == 3 && b(0) == 0xE0 && b(1) < 0xA0) return false;   // overlong
  if (n == 3 && b(0) == 0xED && b(1) >= 0xA0) return false;  // surrogates
  if (n == 4 && b(0) == 0xF0 && b(1) < 0x90) return false;   // overlong
  if (n == 4 && b(0) == 0xF4 && b(1) >= 0x90) return false;  // past U+10FFFF
  return true;
}

constexpr const char* kReplacement = "\xEF\xBF\xBD";  // U+FFFD

}  // namespace

size_t unfinished_utf8_tail(const std::string& s) {
  // A character is at most 4 bytes: look back at most 3 for the lead of an unfinished one.
  for (size_t back = 1; back <= std::min<size_t>(3, s.size()); ++back) {
    const unsigned char c = static_cast<unsigned char>(s[s.size() - back]);
    if (continuation(c)) continue;
    const size_t n = sequence_length(c);
    return n > back ? back : 0;
  }
  return 0;
}

std::string valid_utf8(const std::string& s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size();) {
    const size_t n = sequence_length(static_cast<unsigned char>(s[i]));
    if (n == 0 || i + n > s.size() || !valid_sequence(s, i, n)) {
      out += kReplacement;
      ++i;
      continue;
    }
    out.append(s, i, n);
    i += n;
  }
  return out;
}

TextStream::TextStream(std::vector<std::string> stop) {
  for (std::string& s : stop)
    if (!s.empty()) stop_.push_back(std::move(s));
}

std::string TextStream::release(size_t n) {
  std::string out = valid_utf8(held_.substr(0, n));
  held_.erase(0, n);
  sent_ += out;
  return out;
}

std::string TextStream::push(const std::string& piece) {
  if (stopped_) return "";
  held_ += piece;
  // A stop string inside what is held ends the text right before it (the earliest one wins).
  size_t cut = std::string::npos;
  for (const std::string& s : stop_) cut = std::min(cut, held_.find(s));
  if (cut != std::string::npos) {
    held_.resize(cut);
    stopped_ = true;
    std::string out = release(held_.size());
    held_.clear();
    return out;
  }
  // Hold back the longest tail that could still grow into a stop string...
  size_t keep = 0;
  for (const std::string& s : stop_) {
    for (size_t n = std::min(s.size() - 1, held_.size()); n > keep; --n) {
      if (held_.compare(held_.size() - n, n, s, 0, n) == 0) {
        keep = n;
        break;
      }
    }
  }
  // ...and an unfinished character.
  keep = std::max(keep, unfinished_utf8_tail(held_));
  return release(held_.size() - keep);
}

std::string TextStream::finish() {
  if (stopped_) return "";
  return release(held_.size());
}

}  // namespace tandem::server
