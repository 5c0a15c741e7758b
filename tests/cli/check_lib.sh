# What the CLI test scripts share (sourced): `check NAME CONDITION...` counts a pass or prints the
# failure; `one_line_error TEXT COMMAND...` holds when COMMAND fails cleanly (exit 1 or 2: not a
# signal, not a timeout) with exactly one line on stderr, starting "tandem: error:" and containing TEXT.
# `same_nonempty A B` and `none_exist PATH...` are conditions of two or more parts: written as
# `check NAME [ A ] && [ B ]`, the part after && would run outside check and its failure go uncounted.
passed=0 failed=0
check() {
  local name=$1; shift
  if "$@"; then passed=$((passed + 1)); else failed=$((failed + 1)); echo "FAILED: $name"; fi
}
one_line_error() {
  local expect_in=$1; shift
  local err rc
  err=$("$@" 2>&1 >/dev/null); rc=$?
  [ "$rc" -ge 1 ] && [ "$rc" -le 2 ] && [ "$(printf '%s\n' "$err" | wc -l)" -eq 1 ] && [[ "$err" == "tandem: error:"* ]] && [[ "$err" == *"$expect_in"* ]] \
    || { echo "  rc=$rc stderr: $err"; return 1; }
}
same_nonempty() {  # same_nonempty EXPECTED GOT: EXPECTED is not empty and GOT equals it
  [ -n "$1" ] && [ "$1" = "$2" ] && return 0
  echo "  expected: '$1'"
  echo "  got:      '$2'"
  return 1
}
none_exist() {  # none_exist PATH...: not one of the paths exists
  local p
  for p; do [ ! -e "$p" ] || { echo "  exists: $p"; return 1; }; done
}
