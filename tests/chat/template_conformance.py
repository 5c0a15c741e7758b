#!/usr/bin/env python3
"""Renders real chat templates with tandem and with Python's Jinja2 set up as Hugging Face's
apply_chat_template does, and checks that every prompt matches byte for byte (and that both fail
where one does, with the template's own message).

  template_conformance.py TANDEM VOCAB.gguf TEMPLATES_DIR CONVERSATIONS_DIR [--json OUT] [--gguf F]... [NAME ...]

--gguf F also checks the template F carries in tokenizer.chat_template (read back with
`tandem template --show`), rendered with F's own BOS/EOS.

NAME selects templates by file name (substring); by default the set the project commits to
(REQUIRED below) must all be present and all must match. Exit 0 when all match, 1 when any differs,
77 (skip) when Jinja2 or the templates are missing and TANDEM_REQUIRE_TEMPLATES is not set.
"""
import datetime
import glob
import json
import os
import subprocess
import sys

# Templates the project checks: Llama 3.x, Qwen 2.5/3, Phi-3.5, Gemma 2 (and 4), Mistral,
# DeepSeek-R1 distills, SmolLM3, Granite (llama.cpp's models/templates file names).
REQUIRED = [
    "meta-llama-Llama-3.1-8B-Instruct.jinja",
    "meta-llama-Llama-3.2-3B-Instruct.jinja",
    "meta-llama-Llama-3.3-70B-Instruct.jinja",
    "Qwen-Qwen2.5-7B-Instruct.jinja",
    "Qwen-Qwen3-0.6B.jinja",
    "Qwen-QwQ-32B.jinja",
    "Qwen3-Coder.jinja",
    "microsoft-Phi-3.5-mini-instruct.jinja",
    "google-gemma-2-2b-it.jinja",
    "google-gemma-4-31B-it.jinja",
    "mistralai-Mistral-Nemo-Instruct-2407.jinja",
    "Mistral-Small-3.2-24B-Instruct-2506.jinja",
    "unsloth-mistral-Devstral-Small-2507.jinja",
    "deepseek-ai-DeepSeek-R1-Distill-Llama-8B.jinja",
    "deepseek-ai-DeepSeek-R1-Distill-Qwen-32B.jinja",
    "HuggingFaceTB-SmolLM3-3B.jinja",
    "ibm-granite-granite-3.3-2B-Instruct.jinja",
    "ibm-granite-granite-4.0.jinja",
]

SKIP = 77


def skip_or_fail(message):
    if os.environ.get("TANDEM_REQUIRE_TEMPLATES"):
        print("template_conformance: FAILED: " + message)
        sys.exit(1)
    print("template_conformance: skipped: " + message)
    sys.exit(SKIP)


def jinja2_renderer():
    """Jinja2 as transformers' chat template utilities configure it."""
    try:
        import jinja2
        import jinja2.ext
        import jinja2.nodes
        import jinja2.sandbox
    except ImportError:
        skip_or_fail("Python's jinja2 is not installed (apt-get install python3-jinja2)")

    class TemplateRaised(Exception):
        pass

    def raise_exception(message):
        raise TemplateRaised(message)

    def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
        return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)

    def strftime_now(fmt):
        return datetime.datetime.now().strftime(fmt)

    class Generation(jinja2.ext.Extension):
        # transformers' AssistantTracker: {% generation %}...{% endgeneration %} renders its body.
        tags = {"generation"}

        def parse(self, parser):
            lineno = next(parser.stream).lineno
            body = parser.parse_statements(("name:endgeneration",), drop_needle=True)
            return jinja2.nodes.CallBlock(self.call_method("_body"), [], [], body).set_lineno(lineno)

        def _body(self, caller):
            return caller()

    env = jinja2.sandbox.ImmutableSandboxedEnvironment(
        trim_blocks=True, lstrip_blocks=True, extensions=[Generation, jinja2.ext.loopcontrols])
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = strftime_now

    def render(source, messages, tools, add_generation_prompt, bos_token, eos_token):
        try:
            template = env.from_string(source)
            text = template.render(messages=messages, tools=tools, documents=None,
                                   add_generation_prompt=add_generation_prompt,
                                   bos_token=bos_token, eos_token=eos_token)
            return text, None, False
        except TemplateRaised as e:
            return None, str(e), True
        except Exception as e:  # noqa: BLE001 - any Jinja2 failure is an expected error
            return None, "%s: %s" % (type(e).__name__, e), False

    return render


def tandem_render(tandem, vocab, template, conversations, generation_prompt):
    cmd = [tandem, "template", "-m", vocab, "--json"] + (["--template", template] if template else [])
    if not generation_prompt:
        cmd.append("--no-generation-prompt")
    for c in conversations:
        cmd += ["--messages", c]
    proc = subprocess.run(cmd, capture_output=True, timeout=120)
    lines = proc.stdout.decode("utf-8").splitlines()
    if len(lines) != len(conversations):
        # The template failed to parse (one error line on stderr, no output lines).
        err = proc.stderr.decode("utf-8", "replace").strip()
        return [{"error": err}] * len(conversations)
    return [json.loads(line) for line in lines]


def first_difference(a, b):
    for i, (x, y) in enumerate(zip(a, b)):
        if x != y:
            return i
    return min(len(a), len(b))


def main():
    args = [a for a in sys.argv[1:]]
    out_json = None
    if "--json" in args:
        i = args.index("--json")
        out_json = args[i + 1]
        del args[i:i + 2]
    ggufs = []
    while "--gguf" in args:
        i = args.index("--gguf")
        ggufs.append(args[i + 1])
        del args[i:i + 2]
    if len(args) < 4:
        print(__doc__)
        return 2
    tandem, vocab, templates_dir, conversations_dir = args[:4]
    names = args[4:]
    render = jinja2_renderer()
    if not os.path.isdir(templates_dir):
        skip_or_fail("no chat templates at %s (tests/chat/fetch-templates.sh gets llama.cpp's)" % templates_dir)
    if names:
        templates = sorted(p for p in glob.glob(os.path.join(templates_dir, "*.jinja"))
                           if any(n in os.path.basename(p) for n in names))
    else:
        missing = [n for n in REQUIRED if not os.path.exists(os.path.join(templates_dir, n))]
        if missing:
            print("template_conformance: FAILED: templates missing from %s: %s" % (templates_dir, ", ".join(missing)))
            return 1
        templates = [os.path.join(templates_dir, n) for n in REQUIRED]
    conversations = sorted(glob.glob(os.path.join(conversations_dir, "*.json")))

    # (label, the model file whose BOS/EOS apply, the --template argument or None, the source)
    jobs = [(os.path.basename(t), vocab, t, open(t, encoding="utf-8").read()) for t in templates]
    for g in ggufs:
        shown = subprocess.run([tandem, "template", "-m", g, "--show"], capture_output=True, timeout=60)
        if shown.returncode != 0:
            print("template_conformance: FAILED: %s: %s" % (g, shown.stderr.decode("utf-8", "replace").strip()))
            return 1
        jobs.append((os.path.basename(g) + " (tokenizer.chat_template)", g, None, shown.stdout.decode("utf-8")))

    rows, failures = [], 0
    for label, model, template, source in jobs:
        matched = total = refused = 0
        notes = []
        for generation_prompt in (True, False):
            results = tandem_render(tandem, model, template, conversations, generation_prompt)
            for conv, got in zip(conversations, results):
                data = json.load(open(conv, encoding="utf-8"))
                messages, tools = (data["messages"], data.get("tools")) if isinstance(data, dict) else (data, None)
                bos, eos = got.get("bos_token", ""), got.get("eos_token", "")
                want, want_error, raised = render(source, messages, tools, generation_prompt, bos, eos)
                total += 1
                case = "%s%s" % (os.path.basename(conv), "" if generation_prompt else " (no generation prompt)")
                if want is not None and got.get("prompt") == want:
                    matched += 1
                elif want is None and "error" in got and (not raised or want_error in got["error"]):
                    matched += 1  # both refuse (a raise_exception's message must come through)
                    refused += 1
                else:
                    if want is None:
                        notes.append("%s: Jinja2 fails (%s), tandem %s" % (
                            case, want_error, "renders" if "prompt" in got else "fails: " + got["error"]))
                    elif "error" in got:
                        notes.append("%s: tandem fails: %s" % (case, got["error"]))
                    else:
                        p = got["prompt"]
                        at = first_difference(p, want)
                        notes.append("%s: differ at char %d: tandem %r, Jinja2 %r" % (
                            case, at, p[max(0, at - 20):at + 40], want[max(0, at - 20):at + 40]))
        failures += total - matched
        rows.append({"template": label, "matched": matched, "refused": refused, "cases": total,
                     "notes": notes})

    width = max(len(r["template"]) for r in rows) if rows else 10
    print("%-*s  %-7s  %s" % (width, "template", "match", "of which both refuse"))
    for r in rows:
        print("%-*s  %-7s  %d" % (width, r["template"], "%d/%d" % (r["matched"], r["cases"]), r["refused"]))
        for n in r["notes"]:
            print("    " + n)
    all_cases = sum(r["cases"] for r in rows)
    print("template_conformance: %d templates, %d of %d renders match Jinja2 (%d of them refusals both make)" % (
        len(rows), all_cases - failures, all_cases, sum(r["refused"] for r in rows)))
    if out_json:
        with open(out_json, "w", encoding="utf-8") as f:
            json.dump(rows, f, indent=1, ensure_ascii=False)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
