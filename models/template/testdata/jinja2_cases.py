#!/usr/bin/env python3
"""Regenerate jinja2_cases.json: small templates with the output Python's
jinja2 gives them in the environment transformers uses (the one
../../../../shared/templates/render_reference.py builds).

    /usr/bin/python3 jinja2_cases.py < jinja2_cases.txt > jinja2_cases.json

Input: one case per line, either a template (\\n stands for a newline) or
{"src": ..., "vars": {...}}. Output: a JSON list of {"src", "vars", "want"}
where want is the rendering or "ERROR: <message>".
"""
import json
import pathlib
import sys

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[3] / "shared" / "templates"))
from render_reference import make_env  # noqa: E402

env = make_env()
out = []
for line in sys.stdin:
    line = line.rstrip("\n")
    if not line or line.startswith("##"):
        continue
    case = json.loads(line) if line.startswith('{"src"') else {"src": line.replace("\\n", "\n"), "vars": {}}
    ctx = {"messages": [], "tools": None, "documents": None, "add_generation_prompt": False}
    ctx.update(case.get("vars", {}))
    try:
        want = env.from_string(case["src"]).render(**ctx)
    except Exception as exc:
        want = f"ERROR: {exc}"
    out.append({"src": case["src"], "vars": case.get("vars", {}), "want": want})
json.dump(out, sys.stdout, ensure_ascii=False, indent=1)
sys.stdout.write("\n")
