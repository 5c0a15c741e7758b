# The bad-input cases of issue 56, part 1: a hostile chat template, in a .jinja file and inside a
# model file (sourced near the end of bad_input_test.sh, whose case_in / bad / good / holds,
# $TANDEM, $WORK and $M it uses). Every case ends in a one-line error naming the template's line
# within the 60 s of `bad` (a hang or a crash fails it); the interpreter's own tests
# (tests/jinja/sandbox_test.cpp) hold the many variants of each limit.

TPL="$WORK/templates"
mkdir -p "$TPL"
echo '[{"role": "user", "content": "Hello"}]' >"$TPL/messages.json"
# tpl NAME TEXT: writes $TPL/NAME.jinja.
tpl() { printf '%s' "$2" >"$TPL/$1.jinja"; }
# gen NAME PYTHON: writes $TPL/NAME.jinja from a Python expression (the big ones).
gen() { python3 -c "import sys; sys.stdout.write($2)" >"$TPL/$1.jinja"; }
# "${RENDER[@]}" FILE: the template command on one user message.
RENDER=("$TANDEM" template -m "$M" --messages "$TPL/messages.json" --template)
render() { "${RENDER[@]}" "$TPL/$1.jinja"; }
# heavy: true where a case that runs a limit to its end (or limits the address space) should run:
# not under the sanitizers, where it takes 5-10x as long (tests/cli/CMakeLists.txt sets
# TANDEM_SANITIZED there).
heavy() { [ -z "${TANDEM_SANITIZED:-}" ]; }

case_in "chat templates"
# Crashes: unbounded recursion, the CPU's division trap, chains past the nesting guard.
tpl self-namespace '{% set ns = namespace(a=none) %}{% set ns.a = ns %}{{ ns }}'
holds "a namespace holding itself prints as Jinja2 does" \
  same_nonempty "<Namespace {'a': <Namespace {...}>}>" "$(render self-namespace 2>&1)"
tpl int-min-div '{{ (-9223372036854775807 - 1) // -1 }}'
bad "INT64_MIN // -1" "int-min-div.jinja: line 1: integer // overflows 64 bits" "${RENDER[@]}" "$TPL/int-min-div.jinja"
tpl int-min-mod '{{ (-9223372036854775807 - 1) % -1 }}|{{ (-9223372036854775807 - 1) is divisibleby(-1) }}'
holds "INT64_MIN % -1 is 0" same_nonempty "0|True" "$(render int-min-mod 2>&1)"
gen plus-chain "'{{ ' + ' + '.join(['1'] * 40000) + ' }}'"
bad "40,000 + terms" "plus-chain.jinja: line 1: expression nested past 200 levels" "${RENDER[@]}" "$TPL/plus-chain.jinja"
gen attr-chain "'{{ a' + '.b' * 50000 + ' }}'"
bad "50,000 attributes" "attr-chain.jinja: line 1: expression nested past 200 levels" "${RENDER[@]}" "$TPL/attr-chain.jinja"
gen not-chain "'{{ ' + 'not ' * 50000 + 'true }}'"
bad "not not ... true" "not-chain.jinja: line 1: expression nested past 200 levels" "${RENDER[@]}" "$TPL/not-chain.jinja"
# Hangs: empty loop bodies count, parsing is linear (1 MB of calls; sandbox_test.cpp has the
# other chains and amplifiers).
tpl empty-loops '{% for i in range(1000) %}{% for j in range(1000) %}{% for k in range(1000) %}{% endfor %}{% endfor %}{% endfor %}'
heavy && bad "three nested empty range(1000) loops" "empty-loops.jinja: line 1: the template ran past 5000000 steps" "${RENDER[@]}" "$TPL/empty-loops.jinja"
gen nested-ifs "'\\n' * 2 + '{% if true %}' * 40000 + '{% endif %}' * 40000"
bad "40,000 nested ifs" "nested-ifs.jinja: line 3: blocks nested past 200 levels" "${RENDER[@]}" "$TPL/nested-ifs.jinja"
gen mb-calls "'{{ f' + '()' * 500000 + ' }}'"
bad "1 MB of ()" "mb-calls.jinja: line 1: expression nested past" "${RENDER[@]}" "$TPL/mb-calls.jinja"
gen too-big "'x' * (1024 * 1024 + 1)"
bad "a template past 1 MiB" "too-big.jinja" "${RENDER[@]}" "$TPL/too-big.jinja"
tpl quadratic '{% set ns = namespace(s="") %}{% for i in range(40000) %}{% set ns.s = ns.s ~ "x" * 100 %}{% endfor %}{{ ns.s|length }}'
heavy && bad "ns.s ~ 'x' * 100, 40,000 times" "quadratic.jinja: line 1: the template built or scanned past" "${RENDER[@]}" "$TPL/quadratic.jinja"
# Memory: every builder has the cap (and an allocation that fails is an error, not an abort).
tpl doubling '{% set ns = namespace(s="x") %}{% for i in range(64) %}{% set ns.s = ns.s ~ ns.s %}{% endfor %}'
heavy && bad "~ doubling in a loop" "doubling.jinja: line 1: ~: a string past 64 MiB" "${RENDER[@]}" "$TPL/doubling.jinja"
tpl no-memory '{% set ns = namespace(l=[]) %}{% for i in range(30) %}{% set ns.l = ns.l + ["x" * 8000000] %}{% endfor %}'
# (Not under the sanitizers: ASan reserves terabytes of shadow address space at start.)
heavy && bad "an allocation the address space refuses (ulimit -v)" "no-memory.jinja: line 1: the template ran out of memory" \
  bash -c "ulimit -v 400000 && exec \"\$0\" template -m \"\$1\" --template \"\$2\" --messages \"\$3\"" \
  "$TANDEM" "$M" "$TPL/no-memory.jinja" "$TPL/messages.json"
# Silent wrong no more.
tpl numbers '{{ 1.5|round(1000000000) }}|{{ 2.675|round(2) }}|{{ 5|round }}|{{ strftime_now("%%" * 100000)|length }}'
holds "round past 323 digits, round to 2, round of an int, a long strftime" \
  same_nonempty "1.5|2.67|5|100000" "$(render numbers 2>&1)"
tpl int-past '{{ 1e300|int }}'
bad "1e300|int" "int-past.jinja: line 1: int(): 1e+300 is past 64 bits" "${RENDER[@]}" "$TPL/int-past.jinja"
# The same text inside the model file reaches every command that renders it.
python3 "$HERE/set_chat_template.py" "$M" "$TPL/self-namespace.jinja" "$WORK/tpl-fine.gguf"
good "a model whose template holds itself: run --chat" "$TANDEM" run -m "$WORK/tpl-fine.gguf" --chat -p "Hi" -n 1 --temp 0
python3 "$HERE/set_chat_template.py" "$M" "$TPL/int-min-div.jinja" "$WORK/tpl-crash.gguf"
bad "a model whose template traps: run --chat" "tpl-crash.gguf: tokenizer.chat_template: line 1: integer // overflows" \
  "$TANDEM" run -m "$WORK/tpl-crash.gguf" --chat -p "Hi" -n 1
bad "... and chat" "tpl-crash.gguf: tokenizer.chat_template: line 1: integer // overflows" \
  bash -c "echo Hi | \"\$0\" chat -m \"\$1\" -n 1" "$TANDEM" "$WORK/tpl-crash.gguf"
python3 "$HERE/set_chat_template.py" "$M" "$TPL/empty-loops.jinja" "$WORK/tpl-hang.gguf"
heavy && bad "a model whose template loops: run --chat" "tpl-hang.gguf: tokenizer.chat_template: line 1: the template ran past" \
  "$TANDEM" run -m "$WORK/tpl-hang.gguf" --chat -p "Hi" -n 1
