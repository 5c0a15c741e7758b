#define PCRE2_CODE_UNIT_WIDTH 8
#include "model/tokenizer/regex_splitter.h"

#include <pcre2.h>

#include <utility>

#include "model/tokenizer/unicode_bytes.h"

namespace tandem::tokenizer {

namespace {

// Unicode White_Space, which is what llama.cpp's \s matches (its tables and its custom splitters).
constexpr std::string_view kWhitespaceMembers =
    R"(\t-\r \x{85}\x{A0}\x{1680}\x{2000}-\x{200A}\x{2028}\x{2029}\x{202F}\x{205F}\x{3000})";
// \b over ASCII word characters only.
constexpr std::string_view kAsciiWordBoundary =
    "(?:(?<=[A-Za-z0-9_])(?![A-Za-z0-9_])|(?<![A-Za-z0-9_])(?=[A-Za-z0-9_]))";

bool is_letter_subcategory(std::string_view name) {
  return name == "Lu" || name == "Ll" || name == "Lt" || name == "Lm" || name == "Lo";
}

// Reads "\p{Name}" at p[i] (p[i] == '\\', p[i + 1] == 'p'); returns the name and moves i past '}'.
std::string_view read_property(std::string_view p, size_t& i) {
  const size_t close = p.find('}', i);
  if (p.size() <= i + 2 || p[i + 2] != '{' || close == std::string_view::npos) {
    i += 2;
    return {};
  }
  std::string_view name = p.substr(i + 3, close - (i + 3));
  i = close + 1;
  return name;
}

// Rewrites one [...] class starting at p[i] == '['; moves i past its ']'.
std::string translate_class(std::string_view p, size_t& i) {
  size_t j = i + 1;
  const bool negated = j < p.size() && p[j] == '^';
  if (negated) ++j;
  std::string body;
  bool has_symbol_class = false;
  bool mentions_tilde = false;
  if (j < p.size() && p[j] == ']') body += p[j++];  // a leading ']' is a literal
  while (j < p.size() && p[j] != ']') {
    if (p[j] == '\\' && j + 1 < p.size()) {
      const char e = p[j + 1];
      if (e == 's') {
        body += kWhitespaceMembers;
        j += 2;
      } else if (e == 'd') {
        body += "0-9";
        j += 2;
      } else if (e == 'p') {
        const std::string_view name = read_property(p, j);
        if (name == "S") has_symbol_class = true;
        body += "\\p{";
        body += is_letter_subcategory(name) ? std::string_view("L") : name;
        body += "}";
      } else {
        if (e == '~') mentions_tilde = true;
        body += p.substr(j, 2);
        j += 2;
      }
      continue;
    }
    if (p[j] == '~') mentions_tilde = true;
    body += p[j++];
  }
  i = j + 1;
  std::string cls = std::string(negated ? "[^" : "[") + body + "]";
  if (has_symbol_class && !mentions_tilde) {
    // llama.cpp's \p{S} lacks '~': a negated class then matches it, a positive one does not.
    return negated ? "(?:~|" + cls + ")" : "(?:(?!~)" + cls + ")";
  }
  return cls;
}

}  // namespace

std::string RegexSplitter::translate(std::string_view p) {
  std::string out;
  out.reserve(p.size() * 2);
  size_t i = 0;
  while (i < p.size()) {
    const char c = p[i];
    if (c == '[') {
      out += translate_class(p, i);
      continue;
    }
    if (c == '\\' && i + 1 < p.size()) {
      const char e = p[i + 1];
      if (e == 's' || e == 'S') {
        out += e == 's' ? "[" : "[^";
        out += kWhitespaceMembers;
        out += "]";
        i += 2;
      } else if (e == 'd') {
        out += "[0-9]";
        i += 2;
      } else if (e == 'b') {
        out += kAsciiWordBoundary;
        i += 2;
      } else if (e == 'p') {
        const std::string_view name = read_property(p, i);
        if (name == "S") {
          out += "(?:(?!~)\\p{S})";
        } else {
          out += "\\p{";
          out += is_letter_subcategory(name) ? std::string_view("L") : name;
          out += "}";
        }
      } else {
        out += p.substr(i, 2);
        i += 2;
      }
      continue;
    }
    out += c;
    ++i;
  }
  return out;
}

struct RegexSplitter::Compiled {
  pcre2_code* code = nullptr;
  ~Compiled() { pcre2_code_free(code); }
};

RegexSplitter::RegexSplitter(RegexSplitter&&) noexcept = default;
RegexSplitter& RegexSplitter::operator=(RegexSplitter&&) noexcept = default;
RegexSplitter::~RegexSplitter() = default;

Result<RegexSplitter> RegexSplitter::compile(const std::vector<std::string>& patterns) {
  RegexSplitter splitter;
  for (const std::string& pattern : patterns) {
    const std::string translated = translate(pattern);
    int error_code = 0;
    PCRE2_SIZE error_offset = 0;
    auto compiled = std::make_unique<Compiled>();
    compiled->code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(translated.data()),
                                   translated.size(),
                                   PCRE2_UTF | PCRE2_UCP | PCRE2_DOLLAR_ENDONLY, &error_code,
                                   &error_offset, nullptr);
    if (compiled->code == nullptr) {
      PCRE2_UCHAR message[256];
      pcre2_get_error_message(error_code, message, sizeof(message));
      return Internal("pre-tokenizer regex does not compile at offset " +
                      std::to_string(error_offset) + " (" + reinterpret_cast<char*>(message) +
                      "): " + translated);
    }
    // JIT is an optimisation only: without it (or if it fails) the interpreter runs.
    pcre2_jit_compile(compiled->code, PCRE2_JIT_COMPLETE);
    splitter.regexes_.push_back(std::move(compiled));
  }
  return splitter;
}

namespace {

// Per-thread PCRE2 scratch: match data and a JIT stack big enough for long words under the
// lookahead-heavy patterns (the default 32 KiB JIT stack runs out on them).
struct MatchScratch {
  pcre2_match_data* data = pcre2_match_data_create(32, nullptr);
  pcre2_jit_stack* jit_stack = pcre2_jit_stack_create(32 * 1024, 8 * 1024 * 1024, nullptr);
  pcre2_match_context* context = pcre2_match_context_create(nullptr);
  MatchScratch() {
    if (context != nullptr && jit_stack != nullptr) {
      pcre2_jit_stack_assign(context, nullptr, jit_stack);
    }
  }
  ~MatchScratch() {
    pcre2_match_context_free(context);
    pcre2_jit_stack_free(jit_stack);
    pcre2_match_data_free(data);
  }
};

struct Span {
  size_t begin, end;
};

size_t next_char(std::string_view s, size_t pos) {
  ++pos;
  while (pos < s.size() && (uint8_t(s[pos]) & 0xC0) == 0x80) ++pos;
  return pos;
}

// Appends the matches of `code` inside subject[span] and the text between them, in order.
void split_span(pcre2_code* code, std::string_view subject, Span span, MatchScratch& scratch,
                std::vector<Span>& out) {
  const std::string_view piece = subject.substr(span.begin, span.end - span.begin);
  const auto* base = reinterpret_cast<PCRE2_SPTR>(piece.data());
  size_t last_end = 0;
  size_t start = 0;
  uint32_t options = 0;
  auto emit = [&](size_t b, size_t e) {
    if (e > b) out.push_back({span.begin + b, span.begin + e});
  };
  while (start <= piece.size()) {
    int rc = pcre2_match(code, base, piece.size(), start, options | PCRE2_NO_UTF_CHECK,
                         scratch.data, scratch.context);
    if (rc < 0 && rc != PCRE2_ERROR_NOMATCH) {
      // Resource limit in the JIT: the interpreter has no such stack limit.
      rc = pcre2_match(code, base, piece.size(), start,
                       options | PCRE2_NO_UTF_CHECK | PCRE2_NO_JIT, scratch.data, nullptr);
    }
    if (rc < 0) {
      if (options == 0) break;
      // An empty match here and no non-empty one: move on by one character.
      options = 0;
      start = next_char(piece, start);
      continue;
    }
    const PCRE2_SIZE* ovector = pcre2_get_ovector_pointer(scratch.data);
    const size_t match_begin = ovector[0];
    const size_t match_end = ovector[1];
    emit(last_end, match_begin);
    emit(match_begin, match_end);
    last_end = match_end;
    start = match_end;
    // After an empty match, look for a non-empty one at the same place (std::regex_iterator's
    // rule) before stepping forward.
    options = match_end == match_begin ? (PCRE2_NOTEMPTY_ATSTART | PCRE2_ANCHORED) : 0;
  }
  emit(last_end, piece.size());
}

}  // namespace

void RegexSplitter::split(std::string_view text, bool byte_encode,
                          std::vector<std::string>& words) const {
  // Normalise to the code points llama.cpp sees. `subject` is what the regexes run on; it equals
  // `utf8` except that surrogate code points (valid to llama.cpp, invalid UTF-8 to PCRE2) read as
  // U+FFFD there, with the same byte length, so spans index both.
  const std::vector<uint32_t> cpts = decode_utf8_lenient(text);
  std::string utf8, subject;
  utf8.reserve(text.size());
  subject.reserve(text.size());
  for (uint32_t cpt : cpts) {
    append_utf8(utf8, cpt);
    append_utf8(subject, (cpt >= 0xD800 && cpt <= 0xDFFF) ? kReplacementChar : cpt);
  }

  thread_local MatchScratch scratch;
  std::vector<Span> spans = {{0, subject.size()}};
  std::vector<Span> next;
  for (const auto& regex : regexes_) {
    next.clear();
    for (const Span& span : spans) split_span(regex->code, subject, span, scratch, next);
    spans.swap(next);
  }

  for (const Span& span : spans) {
    std::string word;
    if (byte_encode) {
      word.reserve((span.end - span.begin) * 2);
      for (size_t i = span.begin; i < span.end; ++i) word += byte_to_unicode(uint8_t(utf8[i]));
    } else {
      word.assign(utf8, span.begin, span.end - span.begin);
    }
    words.push_back(std::move(word));
  }
}

}  // namespace tandem::tokenizer
