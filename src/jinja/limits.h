// Every limit of the template interpreter, in one place. A chat template comes from a downloaded
// model file and runs on every chat request, so it is untrusted code: these bound the time, memory
// and stack any template can take, whatever it does. Each value is in docs/bad-input.md ("Chat
// templates"), and each error that enforces one names it and the template's line. The real
// templates (llama.cpp's models/templates, all 68) stay far inside every one of them.
#pragma once

#include <cstddef>
#include <cstdint>

namespace tandem::jinja::limits {

// ---- parsing: linear in the source, and a tree shallow enough to evaluate by recursion ----

// The source of one template (the largest real chat templates are under 30 KB).
inline constexpr size_t kMaxTemplateBytes = size_t(1) << 20;
// Expression depth: nested brackets and calls, and chains of operators, filters, attributes,
// subscripts and calls (`1 + 1 + ...`, `a.b.b...`, `not not ...`) all deepen the tree by one.
inline constexpr int kMaxExpressionDepth = 200;
// Blocks inside blocks ({% if %} in {% for %} in ...).
inline constexpr int kMaxBlockDepth = 200;

// ---- rendering: what one render may spend ----

// Steps: every statement, loop iteration (an empty body too), call, filter and test, and every
// element a built-in visits (membership, comparison, sort, join, unique, ...). Real templates take
// 10^3 to 10^5; 5M is a few seconds of the slowest step mix.
inline constexpr int64_t kMaxSteps = 5'000'000;
// Work bytes: the text and list slots a render builds, copies or scans, summed over the render.
// It bounds the time of string and list work (a quadratic `~` in a loop): about a second.
inline constexpr int64_t kMaxWorkBytes = int64_t(1) << 30;
// Memory: the bytes the render's values hold at once (strings, list slots, dict entries);
// what is freed is given back.
inline constexpr int64_t kMaxLiveBytes = int64_t(256) << 20;
// One string (any value, and the rendered output).
inline constexpr size_t kMaxStringBytes = size_t(64) << 20;
// One list (range(), repetition, a filter's result).
inline constexpr size_t kMaxListItems = size_t(1) << 24;
// range() at most this many items.
inline constexpr int64_t kMaxRangeItems = int64_t(1) << 20;
// Macros running one inside another.
inline constexpr int kMaxMacroDepth = 64;
// Values inside values (lists of lists, dicts of dicts), for printing, comparing and tojson; a
// namespace that holds itself prints as Python's `{...}`.
inline constexpr int kMaxValueDepth = 500;
// The stack a render (or a parse) may take below where it started (macros in blocks in
// expressions); at most half of what the thread has left. (A sanitizer build's frames are several
// times larger: 200 levels of brackets take ~2 MiB there.)
inline constexpr size_t kMaxStackBytes = size_t(4) << 20;
// Widths and indents (format specs, center, indent, tojson(indent=)).
inline constexpr int64_t kMaxPadding = 4096;
// How often (in steps) a render asks its caller whether to stop (a client gone, a SIGTERM).
inline constexpr int64_t kPollSteps = 4096;

}  // namespace tandem::jinja::limits
