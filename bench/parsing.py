"""Benchmark 5: parsing and resolving a generated 10,000-line program, as `dg check` does."""

import subprocess
import tempfile
import time
from pathlib import Path

from .report import make_row
from .startup import dg_command
from .timing import clock_name, measure, median

FULL = {"lines": 10_000, "reps": 5}
SMOKE = {"lines": 120, "reps": 1}

# One unit of the generated program: typical dg code (structs, functions,
# loops, conditionals, maps, tensors, f-strings, closures, gradients).
# {k} makes each unit's names unique.
UNIT = '''\
# unit {k}: a small model with its own loss and a training loop
struct Layer{k} {{ w, b }}

fn dense{k}(layer, x) {{
    return x @ layer.w + layer.b
}}

fn loss{k}(params, x, y) {{
    let h = tanh(dense{k}(params["hidden"], x))
    let out = dense{k}(params["out"], h)
    return mean((out - y) ** 2) + 0.001 * sum(params["out"].w * params["out"].w)
}}

fn train{k}(params, x, y, steps) {{
    let history = ()
    for step in range(steps) {{
        let l, g = value_and_grad(loss{k})(params, x, y)
        params = tree_map(fn(p, d) => p - 0.1 * d, params, g)
        if step % 10 == 0 {{
            history = history + (l,)
        }} else if l < 1e-6 {{
            break
        }}
    }}
    return params, history
}}

let data{k} = {{"x": [[1.0, 2.0], [3.0, -4.5]], "y": [[0.5], [-1.0]], "name": "unit {k}"}}
let model{k} = {{"hidden": Layer{k}(w=zeros((2, 3)), b=zeros((3,))), "out": Layer{k}(zeros((3, 1)), zeros((1,)))}}

fn if_positive{k}(v, n) {{
    let total = 0
    while total < n and v > 0.0 {{
        total += 1
    }}
    return f"value {{v:.3f}} after {{total}} steps: {{not (v > 0.0)}}"
}}

let scale{k} = if_positive{k}(-{k}.5, 2)

'''


def generate(lines):
    """A dg program of about `lines` lines made of UNIT repeated with fresh names."""
    per_unit = UNIT.count("\n")
    return "".join(UNIT.format(k=k) for k in range(max(1, round(lines / per_unit))))


def check_in_process(text, filename):
    """Parse and resolve like `dg check`; fail if the program has errors."""
    from dsl import Interpreter
    problems = Interpreter().check(text, filename)
    if problems:
        raise AssertionError(f"the generated program has {len(problems)} errors: {problems[0]}")


def run(smoke):
    """One row: KB of source per second through dg check's parse and resolve."""
    cfg = SMOKE if smoke else FULL
    text = generate(cfg["lines"])
    kb = len(text.encode("utf-8")) / 1024
    nlines = text.count("\n")
    # the warm-up call builds the parser once, as an earlier check in the same process would
    times = measure({"check": lambda: check_in_process(text, "generated.dg")}, cfg["reps"])["check"]
    rate = kb / median(times)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "generated.dg"
        path.write_text(text, encoding="utf-8")
        t0 = time.perf_counter()
        done = subprocess.run(dg_command() + ["check", str(path)], capture_output=True, text=True)
        whole = time.perf_counter() - t0
    if done.returncode != 0:
        raise AssertionError(f"dg check failed: {done.stderr[-500:]}")
    return [make_row("parsing (dg check)", "KB/s", rate, {}, None, None, ">= 200 KB/s",
                     None if smoke else rate >= 200,
                     f"{nlines:,} lines, {kb:,.0f} KB; parse + resolve in process, median {clock_name()} time "
                     f"of {cfg['reps']}; the whole `dg check` command took {whole:.2f} s (wall) "
                     f"including start-up")]
