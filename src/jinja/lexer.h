// Splits a template into text and tags, applying Jinja2's whitespace rules as Hugging Face
// configures them for chat templates (trim_blocks, lstrip_blocks, `-` and `+` modifiers, the
// template's one trailing newline dropped), and the inside of each tag into expression tokens.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace tandem::jinja {

struct Token {
  enum class Type { kName, kString, kInt, kFloat, kOperator, kEnd };
  Type type = Type::kEnd;
  std::string text;  // the name, the operator, or the string literal's value (escapes resolved)
  int64_t int_value = 0;
  double float_value = 0;
  int line = 0;
};

// One piece of the template: literal text, a {{ expression }}, or a {% statement %}.
struct Segment {
  enum class Kind { kText, kExpression, kStatement };
  Kind kind = Kind::kText;
  std::string text;           // kText
  std::vector<Token> tokens;  // kExpression / kStatement, ending with a kEnd token
  int line = 0;
};

struct LexOptions {
  bool trim_blocks = true;    // drop the first newline after a block tag or comment
  bool lstrip_blocks = true;  // drop spaces and tabs before a block tag or comment on its own line
};

// Throws TemplateError (with the line) on an unclosed tag, comment, string or raw block.
std::vector<Segment> lex_template(std::string_view source, const LexOptions& options);

}  // namespace tandem::jinja
