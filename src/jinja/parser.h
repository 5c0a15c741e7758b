// Builds the statement tree of a lexed template with Jinja2's grammar and operator precedence
// (or < and < not < comparisons < + - < ~ < * / // % < ** < unary < filters, tests, calls).
#pragma once

#include <vector>

#include "jinja/ast.h"
#include "jinja/lexer.h"

namespace tandem::jinja {

// Throws TemplateError naming the line and what was expected.
Body parse_template(const std::vector<Segment>& segments);

}  // namespace tandem::jinja
