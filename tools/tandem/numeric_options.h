// The checks of every numeric option of the CLI, in one place: a value is read as a person writes
// it and refused in their terms, bounds included ("--seed: 'abc' is not an integer", "--threads: 0
// is below 1 (1..1024)", "--seed: 18446744073709551616 is past 2^64-1", "--temp: inf is not finite
// (>= 0)").
//
// Why not CLI11's own (CLI::Range, CLI::NonNegativeNumber): they call "abc" "not in range", print
// their bounds with std::to_string (DBL_MAX as a 309-digit number), and leave the conversion to
// strtoull / strtoll in base 0, which turns 18446744073709551616 into 2^64-1 without a word and
// reads "010" as 8. These are CLI11 transforms: each hands CLI11 back the canonical decimal text of
// the value it checked, so what CLI11 then converts is exactly that value.
#pragma once

#include <cmath>
#include <cstdint>
#include <string>

#include <CLI/CLI.hpp>

namespace tandem::cli {

// An integer lo..hi: decimal digits after an optional sign; no spaces, hex, octal or exponent.
// hi = INT32_MAX (the most an int option holds) reads as "no bound but the type's": ">= lo".
CLI::Validator integer_in(int64_t lo, int64_t hi);
inline CLI::Validator integer_at_least(int64_t lo) { return integer_in(lo, INT32_MAX); }
// Any integer 0..2^64-1 (a seed).
CLI::Validator any_uint64();
// A real number, finite and within a float's range (the real options are floats), in a range:
// [lo, hi], (lo, hi], or with hi = +infinity ">= lo" / "> lo".
struct RealRange {
  double lo = 0;
  double hi = 0;
  bool lo_open = false;
};
CLI::Validator real_in(RealRange range);
inline CLI::Validator real_at_least(double lo) { return real_in({lo, HUGE_VAL, false}); }
inline CLI::Validator real_above(double lo) { return real_in({lo, HUGE_VAL, true}); }

// The checks themselves (for the tests): "" when `text` is good, and then `text` is the canonical
// form CLI11 converts; else the problem, without the option's name (CLI11 puts it first).
std::string check_integer(std::string& text, int64_t lo, int64_t hi);
std::string check_uint64(std::string& text);
std::string check_real(const std::string& text, RealRange range);

}  // namespace tandem::cli
