#include "jinja/parser.h"

#include <algorithm>
#include <set>

#include "jinja/budget.h"
#include "jinja/error.h"
#include "jinja/limits.h"

namespace tandem::jinja {
namespace {

const std::set<std::string> kUnsupportedStatements = {"include", "extends", "block",      "import",
                                                      "from",    "do",      "autoescape", "trans"};

// Reads the tokens of one tag.
class TokenCursor {
 public:
  explicit TokenCursor(const std::vector<Token>& tokens) : t_(tokens) {}
  const Token& peek(size_t ahead = 0) const { return t_[std::min(i_ + ahead, t_.size() - 1)]; }
  const Token& next() { return t_[std::min(i_++, t_.size() - 1)]; }
  bool at_end() const { return peek().type == Token::Type::kEnd; }
  bool is_op(const char* op, size_t ahead = 0) const {
    return peek(ahead).type == Token::Type::kOperator && peek(ahead).text == op;
  }
  bool is_name(const char* name, size_t ahead = 0) const {
    return peek(ahead).type == Token::Type::kName && peek(ahead).text == name;
  }
  bool skip_op(const char* op) {
    if (!is_op(op)) return false;
    ++i_;
    return true;
  }
  bool skip_name(const char* name) {
    if (!is_name(name)) return false;
    ++i_;
    return true;
  }
  [[noreturn]] void error(const std::string& expected) const {
    const Token& t = peek();
    const std::string got = t.type == Token::Type::kEnd ? "the end of the tag" : "'" + t.text + "'";
    throw TemplateError("expected " + expected + ", got " + got, t.line);
  }
  void expect_op(const char* op) {
    if (!skip_op(op)) error(std::string("'") + op + "'");
  }
  std::string expect_name() {
    if (peek().type != Token::Type::kName) error("a name");
    return next().text;
  }
  void expect_end() {
    if (!at_end()) error("the end of the tag");
  }

 private:
  const std::vector<Token>& t_;
  size_t i_ = 0;
};

template <class T>
std::unique_ptr<T> node(int line) {
  auto n = std::make_unique<T>();
  n->line = line;
  return n;
}

int height_of(const ExprPtr& e) { return e ? e->height : 0; }

int height_of(const std::vector<ExprPtr>& es) {
  int h = 0;
  for (const ExprPtr& e : es) h = std::max(h, height_of(e));
  return h;
}

int height_of(const Arguments& a) {
  int h = height_of(a.positional);
  for (const auto& [k, e] : a.keyword) h = std::max(h, height_of(e));
  return h;
}

// Sets n's height, one more than its deepest child's, and refuses a tree deeper than
// limits::kMaxExpressionDepth: a left-associative chain (1 + 1 + ..., a.b.b..., x|f|f...) deepens
// the tree by one a link without any nesting in the text, and both evaluating and freeing the
// tree recurse that deep.
template <class T>
std::unique_ptr<T> with_height(std::unique_ptr<T> n, int deepest_child) {
  n->height = deepest_child + 1;
  if (n->height > limits::kMaxExpressionDepth)
    throw LimitExceeded("expression nested past " + std::to_string(limits::kMaxExpressionDepth) +
                            " levels (brackets, or a chain of operators, filters, attributes or calls)",
                        n->line);
  return n;
}

class ExprParser {
 public:
  ExprParser(TokenCursor& c, const StackLimit& stack) : c_(c), stack_(stack) {}

  ExprPtr expression() {
    ExprPtr e = parse_or();
    while (c_.is_name("if")) {
      auto cond = node<Conditional>(c_.next().line);
      cond->condition = parse_or();
      if (c_.skip_name("else")) {
        const Nesting deeper(*this);  // a if b else c if d else ...: recursion
        cond->else_value = expression();
      }
      cond->then_value = std::move(e);
      const int h = std::max({height_of(cond->condition), height_of(cond->then_value), height_of(cond->else_value)});
      e = with_height(std::move(cond), h);
    }
    return e;
  }

  // An expression, or several separated by commas (a tuple, given to Python as a list).
  ExprPtr tuple_or_expression(bool with_conditional = true) {
    const int line = c_.peek().line;
    ExprPtr first = with_conditional ? expression() : parse_or();
    if (!c_.is_op(",")) return first;
    auto list = node<ListLiteral>(line);
    list->is_tuple = true;
    list->items.push_back(std::move(first));
    while (c_.skip_op(",")) {
      if (c_.at_end() || c_.is_op(")") || c_.is_op("%}")) break;
      list->items.push_back(with_conditional ? expression() : parse_or());
    }
    const int h = height_of(list->items);
    return with_height(std::move(list), h);
  }

  std::unique_ptr<FilterExpr> filter(ExprPtr input) {
    auto f = node<FilterExpr>(c_.peek().line);
    f->name = c_.expect_name();
    while (c_.is_op(".") && c_.peek(1).type == Token::Type::kName) {  // dotted filter names
      c_.next();
      f->name += "." + c_.next().text;
    }
    if (c_.is_op("(")) f->args = call_arguments();
    f->input = std::move(input);
    const int h = std::max(height_of(f->input), height_of(f->args));
    return with_height(std::move(f), h);
  }

  Arguments call_arguments() {
    Arguments args;
    c_.expect_op("(");
    while (!c_.skip_op(")")) {
      if (!args.positional.empty() || !args.keyword.empty()) {
        c_.expect_op(",");
        if (c_.skip_op(")")) break;
      }
      if (c_.is_op("*") || c_.is_op("**"))
        throw TemplateError("*args and **kwargs in a call are not supported", c_.peek().line);
      if (c_.peek().type == Token::Type::kName && c_.is_op("=", 1)) {
        std::string name = c_.next().text;
        c_.next();
        args.keyword.emplace_back(std::move(name), expression());
      } else {
        if (!args.keyword.empty())
          throw TemplateError("a positional argument follows a keyword argument", c_.peek().line);
        args.positional.push_back(expression());
      }
    }
    return args;
  }

 private:
  ExprPtr binary(std::string op, ExprPtr l, ExprPtr r, int line) {
    auto b = node<Binary>(line);
    b->op = std::move(op);
    b->left = std::move(l);
    b->right = std::move(r);
    const int h = std::max(height_of(b->left), height_of(b->right));
    return with_height(std::move(b), h);
  }

  // One left-associative level of binary operators: operands from `next`, joined by any of
  // `ops` (names like "or" or operators like "+").
  template <class Next>
  ExprPtr left_associative(std::initializer_list<const char*> ops, Next next) {
    ExprPtr e = (this->*next)();
    while (true) {
      const char* matched = nullptr;
      for (const char* op : ops)
        if (c_.is_op(op) || c_.is_name(op)) matched = op;
      if (!matched) return e;
      const int line = c_.next().line;
      e = binary(matched, std::move(e), (this->*next)(), line);
    }
  }

  ExprPtr parse_or() { return left_associative({"or"}, &ExprParser::parse_and); }
  ExprPtr parse_and() { return left_associative({"and"}, &ExprParser::parse_not); }
  ExprPtr parse_not() {
    if (c_.is_name("not")) {
      const Nesting deeper(*this);  // not not not ...: recursion
      auto u = node<Unary>(c_.next().line);
      u->op = "not";
      u->operand = parse_not();
      const int h = height_of(u->operand);
      return with_height(std::move(u), h);
    }
    return parse_compare();
  }
  ExprPtr parse_compare() {
    const int line = c_.peek().line;
    ExprPtr first = parse_math1();
    std::unique_ptr<Compare> cmp;
    while (true) {
      std::string op;
      if (c_.peek().type == Token::Type::kOperator &&
          (c_.peek().text == "==" || c_.peek().text == "!=" || c_.peek().text == "<" || c_.peek().text == "<=" ||
           c_.peek().text == ">" || c_.peek().text == ">=")) {
        op = c_.next().text;
      } else if (c_.is_name("in")) {
        c_.next();
        op = "in";
      } else if (c_.is_name("not") && c_.is_name("in", 1)) {
        c_.next();
        c_.next();
        op = "not in";
      } else {
        break;
      }
      if (!cmp) {
        cmp = node<Compare>(line);
        cmp->first = std::move(first);
      }
      cmp->rest.emplace_back(op, parse_math1());
    }
    if (!cmp) return first;
    int h = height_of(cmp->first);
    for (const auto& [op, e] : cmp->rest) h = std::max(h, height_of(e));
    return with_height(std::move(cmp), h);
  }
  ExprPtr parse_math1() { return left_associative({"+", "-"}, &ExprParser::parse_concat); }
  ExprPtr parse_concat() { return left_associative({"~"}, &ExprParser::parse_math2); }
  ExprPtr parse_math2() { return left_associative({"*", "/", "//", "%"}, &ExprParser::parse_pow); }
  ExprPtr parse_pow() { return left_associative({"**"}, &ExprParser::parse_filtered_unary); }
  ExprPtr parse_filtered_unary() { return parse_unary(true); }
  ExprPtr parse_unary(bool with_filter) {
    // Each nesting level of an expression is a few frames of recursion: bound it, so a hostile
    // template is an error, not a stack overflow.
    const Nesting deeper(*this);
    ExprPtr e;
    if (c_.is_op("-") || c_.is_op("+")) {
      auto u = node<Unary>(c_.peek().line);
      u->op = c_.next().text;
      u->operand = parse_unary(false);
      const int h = height_of(u->operand);
      e = with_height(std::move(u), h);
    } else {
      e = primary();
    }
    e = postfix(std::move(e));
    if (with_filter) e = filters_and_tests(std::move(e));
    return e;
  }

  ExprPtr primary() {
    const Token& t = c_.peek();
    switch (t.type) {
      case Token::Type::kName: {
        c_.next();
        auto lit = node<Literal>(t.line);
        if (t.text == "true" || t.text == "True")
          lit->value = Value(true);
        else if (t.text == "false" || t.text == "False")
          lit->value = Value(false);
        else if (t.text == "none" || t.text == "None")
          lit->value = Value::none();
        else {
          auto n = node<Name>(t.line);
          n->name = t.text;
          return n;
        }
        return lit;
      }
      case Token::Type::kString: {
        auto lit = node<Literal>(t.line);
        std::string s = c_.next().text;
        while (c_.peek().type == Token::Type::kString) s += c_.next().text;  // "a" "b" joins, as Python
        lit->value = Value(std::move(s));
        return lit;
      }
      case Token::Type::kInt: {
        auto lit = node<Literal>(t.line);
        lit->value = Value(c_.next().int_value);
        return lit;
      }
      case Token::Type::kFloat: {
        auto lit = node<Literal>(t.line);
        lit->value = Value(c_.next().float_value);
        return lit;
      }
      case Token::Type::kOperator:
        if (t.text == "(") {
          c_.next();
          if (c_.skip_op(")")) {  // ()
            auto empty = node<ListLiteral>(t.line);
            empty->is_tuple = true;
            return empty;
          }
          ExprPtr e = tuple_or_expression();
          c_.expect_op(")");
          return e;
        }
        if (t.text == "[") {
          auto list = node<ListLiteral>(c_.next().line);
          while (!c_.skip_op("]")) {
            if (!list->items.empty()) {
              c_.expect_op(",");
              if (c_.skip_op("]")) break;
            }
            list->items.push_back(expression());
          }
          const int h = height_of(list->items);
          return with_height(std::move(list), h);
        }
        if (t.text == "{") {
          auto dict = node<DictLiteral>(c_.next().line);
          while (!c_.skip_op("}")) {
            if (!dict->items.empty()) {
              c_.expect_op(",");
              if (c_.skip_op("}")) break;
            }
            ExprPtr key = expression();
            c_.expect_op(":");
            dict->items.emplace_back(std::move(key), expression());
          }
          int h = 0;
          for (const auto& [k, v] : dict->items) h = std::max({h, height_of(k), height_of(v)});
          return with_height(std::move(dict), h);
        }
        break;
      default:
        break;
    }
    c_.error("an expression");
  }

  ExprPtr postfix(ExprPtr e) {
    while (true) {
      if (c_.is_op(".")) {
        const int line = c_.next().line;
        auto g = node<GetAttr>(line);
        if (c_.peek().type == Token::Type::kInt) {
          // a.0: Jinja2 reads it as an item
          auto gi = node<GetItem>(line);
          gi->object = std::move(e);
          auto lit = node<Literal>(line);
          lit->value = Value(c_.next().int_value);
          gi->index = std::move(lit);
          const int h = height_of(gi->object);
          e = with_height(std::move(gi), h);
          continue;
        }
        g->name = c_.expect_name();
        g->object = std::move(e);
        const int h = height_of(g->object);
        e = with_height(std::move(g), h);
      } else if (c_.is_op("[")) {
        e = subscript(std::move(e));
      } else if (c_.is_op("(")) {
        e = call(std::move(e));
      } else {
        return e;
      }
    }
  }

  ExprPtr call(ExprPtr callee) {
    auto call = node<Call>(c_.peek().line);
    call->args = call_arguments();
    call->callee = std::move(callee);
    const int h = std::max(height_of(call->callee), height_of(call->args));
    return with_height(std::move(call), h);
  }

  ExprPtr subscript(ExprPtr object) {
    auto g = node<GetItem>(c_.next().line);
    g->object = std::move(object);
    auto part = [&]() -> ExprPtr {
      if (c_.is_op(":") || c_.is_op("]")) return nullptr;
      return expression();
    };
    ExprPtr first = part();
    if (c_.skip_op(":")) {
      g->is_slice = true;
      g->start = std::move(first);
      g->stop = part();
      if (c_.skip_op(":")) g->step = part();
    } else {
      if (!first) c_.error("an index");
      g->index = std::move(first);
    }
    c_.expect_op("]");
    const int h = std::max({height_of(g->object), height_of(g->index), height_of(g->start), height_of(g->stop),
                            height_of(g->step)});
    return with_height(std::move(g), h);
  }

  ExprPtr filters_and_tests(ExprPtr e) {
    while (true) {
      if (c_.skip_op("|")) {
        e = filter(std::move(e));
      } else if (c_.is_name("is")) {
        auto t = node<TestExpr>(c_.next().line);
        t->negated = c_.skip_name("not");
        t->name = c_.expect_name();
        while (c_.is_op(".") && c_.peek(1).type == Token::Type::kName) {
          c_.next();
          t->name += "." + c_.next().text;
        }
        const Token& nx = c_.peek();
        if (c_.is_op("(")) {
          t->args = call_arguments();
        } else if ((nx.type == Token::Type::kName || nx.type == Token::Type::kString || nx.type == Token::Type::kInt ||
                    nx.type == Token::Type::kFloat || c_.is_op("[") || c_.is_op("{")) &&
                   !c_.is_name("else") && !c_.is_name("or") && !c_.is_name("and") && !c_.is_name("if")) {
          if (c_.is_name("is")) c_.error("one test (tests cannot be chained with is)");
          t->args.positional.push_back(postfix(primary()));
        }
        t->input = std::move(e);
        const int h = std::max(height_of(t->input), height_of(t->args));
        e = with_height(std::move(t), h);
      } else if (c_.is_op("(")) {
        e = call(std::move(e));
      } else {
        return e;
      }
    }
  }

  // The parser's own recursion (brackets, `not`, else chains), bounded as the tree is.
  struct Nesting {
    explicit Nesting(ExprParser& p) : p_(p) {
      p_.stack_.check("an expression, in the parser", p_.c_.peek().line);
      if (++p_.depth_ > limits::kMaxExpressionDepth) {
        --p_.depth_;
        throw LimitExceeded("expression nested past " + std::to_string(limits::kMaxExpressionDepth) + " levels",
                            p_.c_.peek().line);
      }
    }
    ~Nesting() { --p_.depth_; }
    ExprParser& p_;
  };

  TokenCursor& c_;
  const StackLimit& stack_;
  int depth_ = 0;
};

Target parse_target(TokenCursor& c, bool allow_attribute) {
  Target t;
  const bool parenthesized = c.skip_op("(");
  t.names.push_back(c.expect_name());
  if (allow_attribute && c.is_op(".")) {
    c.next();
    t.attribute = c.expect_name();
    return t;
  }
  while (c.skip_op(",")) {
    t.is_tuple = true;
    if (c.is_op(")") || c.is_op("=") || c.is_name("in")) break;
    t.names.push_back(c.expect_name());
  }
  if (parenthesized) {
    c.expect_op(")");
    t.is_tuple = true;
  }
  return t;
}

std::vector<MacroParam> parse_params(TokenCursor& c, const StackLimit& stack) {
  std::vector<MacroParam> params;
  c.expect_op("(");
  while (!c.skip_op(")")) {
    if (!params.empty()) {
      c.expect_op(",");
      if (c.skip_op(")")) break;
    }
    MacroParam p;
    p.name = c.expect_name();
    if (c.skip_op("=")) p.default_value = ExprParser(c, stack).expression();
    params.push_back(std::move(p));
  }
  return params;
}

// Walks the segments, building nested bodies.
class StatementParser {
 public:
  explicit StatementParser(const std::vector<Segment>& segments) : s_(segments) {}

  Body parse_all() {
    std::string end;
    Body body = parse_body({}, end);
    return body;
  }

 private:
  // Parses until a statement whose keyword is in `enders`; returns that keyword in `found` and
  // leaves its cursor (for elif's condition) in `end_cursor_`.
  Body parse_body(const std::set<std::string>& enders, std::string& found) {
    stack_.check("blocks, in the parser", i_ ? s_[i_ - 1].line : 0);
    if (++nesting_ > limits::kMaxBlockDepth) {
      --nesting_;
      throw LimitExceeded("blocks nested past " + std::to_string(limits::kMaxBlockDepth) + " levels",
                          i_ ? s_[i_ - 1].line : 0);
    }
    struct Leave {
      int& d;
      ~Leave() { --d; }
    } leave{nesting_};
    Body body;
    while (i_ < s_.size()) {
      const Segment& seg = s_[i_++];
      if (seg.kind == Segment::Kind::kText) {
        auto t = node<TextStmt>(seg.line);
        t->text = seg.text;
        body.push_back(std::move(t));
        continue;
      }
      if (seg.kind == Segment::Kind::kExpression) {
        TokenCursor c(seg.tokens);
        auto o = node<OutputStmt>(seg.line);
        o->expr = ExprParser(c, stack_).tuple_or_expression();
        c.expect_end();
        body.push_back(std::move(o));
        continue;
      }
      cursor_ = std::make_unique<TokenCursor>(seg.tokens);
      TokenCursor& c = *cursor_;
      if (c.peek().type != Token::Type::kName) c.error("a statement name");
      const std::string keyword = c.peek().text;
      if (enders.count(keyword)) {
        c.next();
        found = keyword;
        return body;
      }
      body.push_back(statement(c, seg.line));
    }
    if (!enders.empty()) {
      std::string list;
      for (const auto& e : enders) list += (list.empty() ? "" : " or ") + ("{% " + e + " %}");
      throw TemplateError("the template ended before " + list, s_.empty() ? 0 : s_.back().line);
    }
    return body;
  }

  Body parse_until(const std::string& end_keyword, int line) {
    std::string found;
    Body body = parse_body({end_keyword}, found);
    (void)line;
    cursor_->expect_end();
    return body;
  }

  StmtPtr statement(TokenCursor& c, int line) {
    const std::string keyword = c.next().text;
    if (keyword == "if") {
      auto s = node<IfStmt>(line);
      ExprPtr cond = ExprParser(c, stack_).tuple_or_expression();
      c.expect_end();
      while (true) {
        std::string found;
        Body body = parse_body({"elif", "else", "endif"}, found);
        s->branches.emplace_back(std::move(cond), std::move(body));
        if (found == "elif") {
          cond = ExprParser(*cursor_, stack_).tuple_or_expression();
          cursor_->expect_end();
          continue;
        }
        cursor_->expect_end();
        if (found == "else") s->else_body = parse_until("endif", line);
        break;
      }
      return s;
    }
    if (keyword == "for") {
      auto s = node<ForStmt>(line);
      s->target = parse_target(c, false);
      if (!c.skip_name("in")) c.error("'in'");
      ExprParser p(c, stack_);
      s->iterable = p.tuple_or_expression(false);
      if (c.skip_name("if")) s->filter = p.expression();
      if (c.is_name("recursive")) throw TemplateError("recursive for loops are not supported", line);
      c.expect_end();
      std::string found;
      s->body = parse_body({"else", "endfor"}, found);
      cursor_->expect_end();
      if (found == "else") s->else_body = parse_until("endfor", line);
      return s;
    }
    if (keyword == "set") {
      Target target = parse_target(c, true);
      if (c.skip_op("=")) {
        auto s = node<SetStmt>(line);
        s->target = std::move(target);
        s->value = ExprParser(c, stack_).tuple_or_expression();
        c.expect_end();
        return s;
      }
      auto s = node<SetBlockStmt>(line);
      s->target = std::move(target);
      ExprParser p(c, stack_);
      while (c.skip_op("|")) s->filters.push_back(p.filter(nullptr));
      c.expect_end();
      s->body = parse_until("endset", line);
      return s;
    }
    if (keyword == "macro") {
      auto s = node<MacroStmt>(line);
      s->name = c.expect_name();
      s->params = parse_params(c, stack_);
      c.expect_end();
      s->body = parse_until("endmacro", line);
      return s;
    }
    if (keyword == "call") {
      auto s = node<CallBlockStmt>(line);
      if (c.is_op("(")) s->caller_params = parse_params(c, stack_);
      ExprPtr e = ExprParser(c, stack_).expression();
      auto* call = dynamic_cast<Call*>(e.get());
      if (!call) throw TemplateError("{% call %} needs a macro call", line);
      e.release();
      s->call.reset(call);
      c.expect_end();
      s->body = parse_until("endcall", line);
      return s;
    }
    if (keyword == "filter") {
      auto s = node<FilterBlockStmt>(line);
      ExprParser p(c, stack_);
      s->filters.push_back(p.filter(nullptr));
      while (c.skip_op("|")) s->filters.push_back(p.filter(nullptr));
      c.expect_end();
      s->body = parse_until("endfilter", line);
      return s;
    }
    if (keyword == "with") {
      auto s = node<WithStmt>(line);
      while (!c.at_end()) {
        if (!s->assignments.empty()) c.expect_op(",");
        Target t = parse_target(c, false);
        c.expect_op("=");
        s->assignments.emplace_back(std::move(t), ExprParser(c, stack_).expression());
      }
      s->body = parse_until("endwith", line);
      return s;
    }
    if (keyword == "break" || keyword == "continue") {
      c.expect_end();
      auto s = node<LoopControlStmt>(line);
      s->control = keyword == "break" ? LoopControl::kBreak : LoopControl::kContinue;
      return s;
    }
    if (keyword == "generation") {
      c.expect_end();
      auto s = node<TransparentBlockStmt>(line);
      s->body = parse_until("endgeneration", line);
      return s;
    }
    if (kUnsupportedStatements.count(keyword))
      throw TemplateError("the {% " + keyword + " %} statement is not supported (a chat template renders alone)", line);
    throw TemplateError("unknown statement {% " + keyword + " %}", line);
  }

  const std::vector<Segment>& s_;
  const StackLimit stack_;  // where parsing starts
  size_t i_ = 0;
  int nesting_ = 0;
  std::unique_ptr<TokenCursor> cursor_;  // the cursor of the statement that ended the last body
};

}  // namespace

Body parse_template(const std::vector<Segment>& segments) { return StatementParser(segments).parse_all(); }

}  // namespace tandem::jinja
