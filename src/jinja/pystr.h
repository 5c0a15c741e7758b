// Python's str methods on UTF-8 text, as templates call them (strip, split, startswith, format,
// ...). Case mapping covers ASCII only; every other character keeps its case.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "jinja/value.h"

namespace tandem::jinja::pystr {

bool is_space(std::string_view ch);  // one UTF-8 character: Python's str.isspace()

// chars: the set to strip (by character); nullopt strips whitespace.
std::string strip(std::string_view s, const std::optional<std::string>& chars, bool left, bool right);
// sep nullopt: runs of whitespace, no empty parts. maxsplit < 0: no limit. from_right: rsplit.
std::vector<std::string> split(std::string_view s, const std::optional<std::string>& sep, int64_t maxsplit,
                               bool from_right = false);
std::vector<std::string> splitlines(std::string_view s, bool keepends = false);
std::string replace(std::string_view s, std::string_view old, std::string_view with, int64_t count = -1);
std::string upper(std::string_view s);
std::string lower(std::string_view s);
std::string title(std::string_view s);
std::string capitalize(std::string_view s);
// Python's str.format: {} {0} {name} {{ }}, with !r/!s and a format spec of fill, align,
// width, precision and type for the common cases.
std::string format(std::string_view fmt, const CallArgs& args);
// markupsafe's escape: & < > " ' as entities.
std::string html_escape(const std::string& s);
// Python's printf-style `fmt % args` (the `format` filter; percent_format.cpp): %s %r %d %i %u
// %o %x %X %e %E %f %F %g %G %c %%, with flags, width and precision (each at most
// limits::kMaxPadding), and %(name)s keys when `keyword` is not empty.
std::string percent_format(std::string_view fmt, const std::vector<Value>& positional,
                           const std::vector<std::pair<std::string, Value>>& keyword);

}  // namespace tandem::jinja::pystr
