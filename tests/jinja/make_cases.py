#!/usr/bin/env python3
"""Renders every case of cases.in.json with Python's Jinja2, configured as Hugging Face renders chat
templates, and writes cases.json (the inputs with Jinja2's output or its error) for jinja_test.

  make_cases.py [--check]   (--check: exit 1 when cases.json differs from what Jinja2 gives now)
"""
import datetime
import json
import os
import sys

try:
    import jinja2
    import jinja2.ext
    import jinja2.sandbox
except ImportError:
    if os.environ.get("TANDEM_REQUIRE_TEMPLATES"):
        print("make_cases: FAILED: Python's jinja2 is not installed (apt-get install python3-jinja2)")
        sys.exit(1)
    print("make_cases: skipped: Python's jinja2 is not installed (apt-get install python3-jinja2)")
    sys.exit(77)

HERE = os.path.dirname(os.path.abspath(__file__))


class TemplateRaised(Exception):
    pass


def raise_exception(message):
    raise TemplateRaised(message)


def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
    return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)


def environment():
    env = jinja2.sandbox.ImmutableSandboxedEnvironment(
        trim_blocks=True, lstrip_blocks=True, extensions=[jinja2.ext.loopcontrols])
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    # Hugging Face's: the local time by a strftime format (cases use formats without a date).
    env.globals["strftime_now"] = lambda fmt: datetime.datetime.now().strftime(fmt)
    return env


def main():
    cases = json.load(open(os.path.join(HERE, "cases.in.json"), encoding="utf-8"))
    env = environment()
    out = []
    for case in cases:
        result = dict(case)
        try:
            result["output"] = env.from_string(case["template"]).render(**case.get("vars", {}))
        except TemplateRaised as e:
            result["raised"] = str(e)
        except Exception as e:  # noqa: BLE001 - an error is an expected result
            result["error"] = type(e).__name__ + ": " + str(e)
        out.append(result)
    text = json.dumps(out, indent=1, ensure_ascii=False) + "\n"
    path = os.path.join(HERE, "cases.json")
    if "--check" in sys.argv:
        if open(path, encoding="utf-8").read() != text:
            print("make_cases: cases.json differs from what Jinja2 gives; rerun tests/jinja/make_cases.py")
            return 1
        print("make_cases: cases.json matches Jinja2 (%d cases)" % len(out))
        return 0
    open(path, "w", encoding="utf-8").write(text)
    print("make_cases: wrote %d cases" % len(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
