#!/usr/bin/env python3
"""Renders every template of tests/chat/templates/ with every conversation of
tests/chat/cases.json the way Hugging Face's apply_chat_template does (Jinja2,
ImmutableSandboxedEnvironment with trim_blocks, lstrip_blocks and loop
controls; tojson as json.dumps(ensure_ascii=False); raise_exception;
strftime_now fixed to 2026-01-02 so outputs are stable) and writes the
results to tests/chat/references/TEMPLATE.json: {case: {"text": ...},
{"raised": raise_exception's message} or {"error": Python's message}}. tests/chat_template_test.cc compares Strata's renderer
with them. Needs python3 with jinja2 (Debian: python3-jinja2).

    python3 tests/chat/make_references.py
"""
import datetime
import json
import os
import sys

import jinja2
from jinja2.ext import loopcontrols
from jinja2.sandbox import ImmutableSandboxedEnvironment

HERE = os.path.dirname(os.path.abspath(__file__))
FIXED_NOW = datetime.datetime(2026, 1, 2, 3, 4, 5)


class RaisedByTemplate(Exception):
    pass


def raise_exception(message):
    raise RaisedByTemplate(message)


def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
    return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)


def strftime_now(fmt):
    return FIXED_NOW.strftime(fmt)


def main():
    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True, extensions=[loopcontrols])
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = strftime_now
    with open(os.path.join(HERE, "cases.json")) as f:
        cases = json.load(f)
    for name in sorted(os.listdir(os.path.join(HERE, "templates"))):
        if not name.endswith(".jinja"):
            continue
        with open(os.path.join(HERE, "templates", name)) as f:
            template = env.from_string(f.read())
        results = {}
        for case_name, context in cases.items():
            try:
                results[case_name] = {"text": template.render(**context)}
            except RaisedByTemplate as e:  # the template's own refusal: its message must match
                results[case_name] = {"raised": str(e)}
            except Exception as e:  # the template failing on this input: any error will do
                results[case_name] = {"error": str(e)}
        out = os.path.join(HERE, "references", name[: -len(".jinja")] + ".json")
        with open(out + ".tmp", "w") as f:
            json.dump(results, f, ensure_ascii=False, indent=1, sort_keys=True)
            f.write("\n")
        os.replace(out + ".tmp", out)
        print(out, file=sys.stderr)


if __name__ == "__main__":
    main()
