#include "jinja/lexer.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "jinja/error.h"
#include "jinja/value.h"

namespace tandem::jinja {
namespace {

// Python's str.isspace() for the ASCII range (what rstrip() and \s remove).
bool is_space(char c) { return c == ' ' || (c >= '\t' && c <= '\r') || (c >= '\x1c' && c <= '\x1f'); }

// Line numbers by a binary search over the newlines' offsets: counting newlines from the start
// for every token made lexing quadratic in the template's size.
class LineIndex {
 public:
  explicit LineIndex(std::string_view src) {
    for (size_t i = 0; i < src.size(); ++i)
      if (src[i] == '\n') newlines_.push_back(i);
  }
  int line_at(size_t pos) const {
    return 1 + int(std::lower_bound(newlines_.begin(), newlines_.end(), pos) - newlines_.begin());
  }

 private:
  std::vector<size_t> newlines_;
};

// Jinja2 gives every data token \n newlines (its newline_sequence).
std::string normalize_newlines(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\r') {
      out += '\n';
      if (i + 1 < s.size() && s[i + 1] == '\n') ++i;
    } else {
      out += s[i];
    }
  }
  return out;
}

// A string literal's escapes, as Python's "unicode-escape" codec resolves them (what Jinja2
// applies): unknown escapes keep their backslash.
std::string unescape(std::string_view body, int line) {
  std::string out;
  for (size_t i = 0; i < body.size(); ++i) {
    if (body[i] != '\\' || i + 1 == body.size()) {
      out += body[i];
      continue;
    }
    const char c = body[++i];
    auto hex = [&](size_t digits) {
      if (i + digits >= body.size())
        throw TemplateError("truncated \\" + std::string(1, c) + " escape in a string literal", line);
      uint32_t cp = 0;
      for (size_t k = 1; k <= digits; ++k) {
        const char h = i + k < body.size() ? body[i + k] : 'g';
        const int v = h >= '0' && h <= '9'   ? h - '0'
                      : h >= 'a' && h <= 'f' ? h - 'a' + 10
                      : h >= 'A' && h <= 'F' ? h - 'A' + 10
                                             : -1;
        if (v < 0) throw TemplateError("bad \\" + std::string(1, c) + " escape in a string literal", line);
        cp = cp * 16 + uint32_t(v);
      }
      i += digits;
      if (cp > 0x10ffff) throw TemplateError("\\U escape past U+10FFFF in a string literal", line);
      append_utf8(out, cp);
    };
    switch (c) {
      case 'n':
        out += '\n';
        break;
      case 't':
        out += '\t';
        break;
      case 'r':
        out += '\r';
        break;
      case '\\':
        out += '\\';
        break;
      case '\'':
        out += '\'';
        break;
      case '"':
        out += '"';
        break;
      case 'a':
        out += '\a';
        break;
      case 'b':
        out += '\b';
        break;
      case 'f':
        out += '\f';
        break;
      case 'v':
        out += '\v';
        break;
      case '\n':
        break;  // a backslash-newline joins lines
      case 'x':
        hex(2);
        break;
      case 'u':
        hex(4);
        break;
      case 'U':
        hex(8);
        break;
      default:
        if (c >= '0' && c <= '7') {
          uint32_t cp = 0;
          size_t k = 0;
          for (; k < 3 && i + k < body.size() && body[i + k] >= '0' && body[i + k] <= '7'; ++k)
            cp = cp * 8 + uint32_t(body[i + k] - '0');
          i += k - 1;
          append_utf8(out, cp);
        } else {
          out += '\\';
          out += c;
        }
    }
  }
  return out;
}

bool is_name_start(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
bool is_digit(char c) { return c >= '0' && c <= '9'; }

struct TagLexer {
  std::string_view src;
  const LineIndex& lines;
  size_t pos;
  char kind;  // '{' for {{ }}, '%' for {% %}

  // Tokens up to the tag's closer; leaves pos after the closer and reports its modifier.
  std::vector<Token> run(char& close_modifier) {
    std::vector<Token> tokens;
    int depth = 0;
    const std::string closer = kind == '{' ? "}}" : "%}";
    while (true) {
      while (pos < src.size() && is_space(src[pos])) ++pos;
      if (pos >= src.size())
        throw TemplateError(std::string("unclosed ") + (kind == '{' ? "{{" : "{%") + " tag", lines.line_at(pos));
      const int line = lines.line_at(pos);
      if (depth == 0) {
        for (char m : {'-', '+', '\0'}) {
          if (m == '+' && kind == '{') continue;
          const std::string candidate = m ? std::string(1, m) + closer : closer;
          if (src.substr(pos, candidate.size()) == candidate) {
            close_modifier = m;
            pos += candidate.size();
            Token end;
            end.line = line;
            tokens.push_back(end);
            return tokens;
          }
        }
      }
      Token t;
      t.line = line;
      const char c = src[pos];
      if (is_name_start(c)) {
        size_t e = pos;
        while (e < src.size() && (is_name_start(src[e]) || is_digit(src[e]))) ++e;
        t.type = Token::Type::kName;
        t.text = std::string(src.substr(pos, e - pos));
        pos = e;
      } else if (is_digit(c)) {
        size_t e = pos;
        auto digits = [&] {
          while (e < src.size() && (is_digit(src[e]) || (src[e] == '_' && e + 1 < src.size() && is_digit(src[e + 1]))))
            ++e;
        };
        digits();
        bool is_float = false;
        if (e + 1 < src.size() && src[e] == '.' && is_digit(src[e + 1])) {
          is_float = true;
          ++e;
          digits();
        }
        if (e < src.size() && (src[e] == 'e' || src[e] == 'E')) {
          size_t x = e + 1;
          if (x < src.size() && (src[x] == '+' || src[x] == '-')) ++x;
          if (x < src.size() && is_digit(src[x])) {
            is_float = true;
            e = x;
            digits();
          }
        }
        std::string text;
        for (char ch : src.substr(pos, e - pos))
          if (ch != '_') text += ch;
        if (is_float) {
          t.type = Token::Type::kFloat;
          t.float_value = std::strtod(text.c_str(), nullptr);  // 1e999 is inf, as in Python
        } else {
          t.type = Token::Type::kInt;
          try {
            t.int_value = std::stoll(text);
          } catch (const std::exception&) {
            throw TemplateError("integer literal " + text + " is past 64 bits", line);
          }
        }
        t.text = text;
        pos = e;
      } else if (c == '\'' || c == '"') {
        size_t e = pos + 1;
        while (e < src.size() && src[e] != c) e += src[e] == '\\' ? 2 : 1;
        if (e >= src.size()) throw TemplateError("unterminated string literal", line);
        t.type = Token::Type::kString;
        t.text = unescape(normalize_newlines(src.substr(pos + 1, e - pos - 1)), line);
        pos = e + 1;
      } else {
        static const char* const kOperators[] = {"//", "**", "==", "!=", "<=", ">=", "+", "-", "*", "/", "%", "~", "(",
                                                 ")",  "[",  "]",  "{",  "}",  ",",  ".", ":", "|", "=", "<", ">"};
        const char* match = nullptr;
        for (const char* op : kOperators)
          if (src.substr(pos, std::strlen(op)) == op) {
            match = op;
            break;
          }
        if (!match) throw TemplateError(std::string("unexpected character '") + c + "' in a tag", line);
        t.type = Token::Type::kOperator;
        t.text = match;
        pos += t.text.size();
        if (t.text == "(" || t.text == "[" || t.text == "{") ++depth;
        if ((t.text == ")" || t.text == "]" || t.text == "}") && depth > 0) --depth;
      }
      tokens.push_back(std::move(t));
    }
  }
};

// After a tag: `-` eats all whitespace; trim_blocks eats one newline after a block or comment.
size_t skip_after_tag(std::string_view src, size_t pos, char modifier, bool is_block, const LexOptions& o) {
  if (modifier == '-') {
    while (pos < src.size() && is_space(src[pos])) ++pos;
  } else if (modifier != '+' && is_block && o.trim_blocks && pos < src.size() && src[pos] == '\n') {
    ++pos;
  }
  return pos;
}

// Before a tag: `-` strips all whitespace; lstrip_blocks strips the spaces before a block tag
// or comment when nothing else precedes it on its line.
void strip_before_tag(std::string& text, char modifier, bool is_block, bool line_starting, const LexOptions& o) {
  if (modifier == '-') {
    while (!text.empty() && is_space(text.back())) text.pop_back();
    return;
  }
  if (modifier == '+' || !is_block || !o.lstrip_blocks) return;
  const size_t nl = text.rfind('\n');
  const size_t line_start = nl == std::string::npos ? 0 : nl + 1;
  if (line_start == 0 && !line_starting) return;
  if (line_start == text.size()) return;
  for (size_t i = line_start; i < text.size(); ++i)
    if (!is_space(text[i])) return;
  text.resize(line_start);
}

}  // namespace

std::vector<Segment> lex_template(std::string_view source, const LexOptions& options) {
  // Jinja2 reads the source with \n newlines only, and drops one trailing newline
  // (keep_trailing_newline=False).
  const std::string normalized = normalize_newlines(source);
  std::string_view src = normalized;
  if (!src.empty() && src.back() == '\n') src.remove_suffix(1);
  const LineIndex lines(src);

  std::vector<Segment> out;
  auto push_text = [&](std::string text, size_t at) {
    if (text.empty()) return;
    Segment s;
    s.kind = Segment::Kind::kText;
    s.text = normalize_newlines(text);
    s.line = lines.line_at(at);
    out.push_back(std::move(s));
  };

  size_t pos = 0;
  bool line_starting = true;
  while (pos < src.size()) {
    size_t open = pos;
    while (true) {
      open = src.find('{', open);
      if (open == std::string_view::npos || open + 1 >= src.size()) {
        open = std::string_view::npos;
        break;
      }
      const char k = src[open + 1];
      if (k == '{' || k == '%' || k == '#') break;
      ++open;
    }
    if (open == std::string_view::npos) {
      push_text(std::string(src.substr(pos)), pos);
      break;
    }
    std::string text(src.substr(pos, open - pos));
    const char kind = src[open + 1];
    size_t p = open + 2;
    char open_modifier = 0;
    if (p < src.size() && (src[p] == '-' || (src[p] == '+' && kind != '{'))) open_modifier = src[p++];
    const bool is_block = kind != '{';
    strip_before_tag(text, open_modifier, is_block, line_starting, options);
    push_text(std::move(text), pos);
    const int tag_line = lines.line_at(open);

    if (kind == '#') {
      size_t close = src.find("#}", p);
      if (close == std::string_view::npos) throw TemplateError("unclosed comment", tag_line);
      const char m = close > p && (src[close - 1] == '-' || src[close - 1] == '+') ? src[close - 1] : 0;
      const size_t after = skip_after_tag(src, close + 2, m, true, options);
      line_starting = after > 0 && src[after - 1] == '\n';
      pos = after;
      continue;
    }

    TagLexer lexer{src, lines, p, kind};
    char close_modifier = 0;
    Segment seg;
    seg.kind = kind == '{' ? Segment::Kind::kExpression : Segment::Kind::kStatement;
    seg.line = tag_line;
    seg.tokens = lexer.run(close_modifier);
    size_t after = skip_after_tag(src, lexer.pos, close_modifier, is_block, options);
    line_starting = after > lexer.pos && src[after - 1] == '\n';

    // {% raw %}: everything up to {% endraw %} is text.
    if (kind == '%' && seg.tokens.size() == 2 && seg.tokens[0].type == Token::Type::kName &&
        seg.tokens[0].text == "raw") {
      size_t search = after;
      while (true) {
        const size_t tag = src.find("{%", search);
        if (tag == std::string_view::npos) throw TemplateError("{% raw %} without {% endraw %}", tag_line);
        size_t q = tag + 2;
        char m = 0;
        if (q < src.size() && (src[q] == '-' || src[q] == '+')) m = src[q++];
        while (q < src.size() && is_space(src[q])) ++q;
        if (src.substr(q, 6) != "endraw") {
          search = tag + 2;
          continue;
        }
        q += 6;
        while (q < src.size() && is_space(src[q])) ++q;
        char cm = 0;
        if (q < src.size() && (src[q] == '-' || src[q] == '+')) cm = src[q++];
        if (src.substr(q, 2) != "%}") {
          search = tag + 2;
          continue;
        }
        std::string body(src.substr(after, tag - after));
        strip_before_tag(body, m, true, line_starting, options);
        push_text(std::move(body), after);
        after = skip_after_tag(src, q + 2, cm, true, options);
        line_starting = after > 0 && src[after - 1] == '\n';
        break;
      }
      pos = after;
      continue;
    }
    out.push_back(std::move(seg));
    pos = after;
  }
  return out;
}

}  // namespace tandem::jinja
