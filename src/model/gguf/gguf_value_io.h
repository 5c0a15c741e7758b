// Reading and writing GGUF metadata values (the bytes after a key), shared by reader and writer.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "model/gguf/byte_cursor.h"
#include "model/gguf/gguf.h"

namespace tandem::gguf {

inline constexpr uint32_t kValueTypeCount = 13;  // ids 0..12
// Arrays of arrays are legal GGUF; the bound keeps a hostile file from recursing the stack away.
inline constexpr int kMaxArrayDepth = 8;

inline bool is_known_value_type(uint32_t id) { return id < kValueTypeCount; }

// Why a value could not be read: `where` is the element path inside arrays ("[3][0]", empty for
// the top-level value), built while unwinding so the happy path formats no strings.
struct ValueReadError {
  std::string where;
  std::string problem;  // "problem (value)"
};

// Reads one value of type `type_id` (already read from the file). `depth` is the array nesting
// level of this value (0 for a key's own value).
std::optional<ValueReadError> read_value(ByteCursor& cursor, uint32_t type_id, int depth, Value& out);

// Checks that a value can be written: array items match the declared element type, nesting is
// bounded. Returns the problem, or nullopt.
std::optional<ValueReadError> check_writable(const Value& value, int depth = 0);

// Appends the encoding of `value` (without its type id) to `out`.
void append_value(std::string& out, const Value& value);

// Text from the file made safe for a one-line message: control bytes become \xNN and long text
// is cut to max_bytes with "...". Keys, names and strings pass through this before printing.
std::string printable(std::string_view text, size_t max_bytes = 80);

// Short human description for error messages: `uint32 5`, `string "llama"`, `array of 3 int32`.
std::string describe_value(const Value& value);

}  // namespace tandem::gguf
