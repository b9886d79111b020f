"""dg as it was before issues 12 and 13, the reference some of their targets name: "jit >= 20x
faster than today's eager", "hessian >= 5x faster than today's row-by-row version".

`DG_BENCH_BEFORE=DIR python -m bench` adds it to the loop and higher-order rows, DIR being a
checkout of that dg (`git worktree add /tmp/dg-before 1363907`). Its calls are timed in a child
process that imports dsl from DIR, by this checkout's bench/timing.py (the same repetitions,
blocks and clock as every other figure), while the benchmark's own process waits.
"""

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

BEFORE = "1363907"      # the last commit before issues 12-16: eager only, hessian by rows
ENV = "DG_BENCH_BEFORE"
TIMING = Path(__file__).with_name("timing.py")

CHILD = r"""
import importlib.util, json, sys
spec = importlib.util.spec_from_file_location("bench_timing", sys.argv[1])
timing = importlib.util.module_from_spec(spec)
spec.loader.exec_module(timing)
import numpy as np
import dsl
calls, reps = json.loads(sys.argv[2]), int(sys.argv[3])
arrays = dict(np.load(sys.argv[4]))
fns = {}
for name, (source, setup, call) in calls.items():
    interp = dsl.Interpreter(seed=0, keep_tape=False)
    interp.run(source)
    space = dict(arrays, i=interp.lookup, np=np)
    exec(setup, space)
    fns[name] = eval("lambda: " + call, space)
    fns[name]()
times = timing.measure(fns, reps)
print("BEFORE-JSON:" + json.dumps({k: timing.median(v) * 1e3 for k, v in times.items()}))
"""


def directory():
    """The checkout of dg before jit named by DG_BENCH_BEFORE, or None."""
    path = os.environ.get(ENV)
    return Path(path) if path else None


def note():
    """What the rows say when the reference is not measured."""
    return f"dg before issue 12 not measured (set {ENV} to a checkout of commit {BEFORE})"


def times(calls, reps, arrays=None):
    """name -> ms per call of each (dg source, Python setup, Python call) in dg before jit, or None.

    The setup and call see `i` (the interpreter's lookup), `np` and the `arrays` by name."""
    root = directory()
    if root is None:
        return None
    if not (root / "dsl").is_dir():
        raise SystemExit(f"{ENV}={root} is not a checkout of dg (no dsl/ there)")
    with tempfile.TemporaryDirectory() as tmp:
        data = os.path.join(tmp, "arrays.npz")
        np.savez(data, **(arrays or {}))
        env = dict(os.environ, PYTHONPATH=str(root))
        proc = subprocess.run([sys.executable, "-c", CHILD, str(TIMING), json.dumps(calls), str(reps), data],
                              capture_output=True, text=True, env=env, cwd=root)
    if proc.returncode != 0:
        raise RuntimeError(f"dg before jit failed:\n{proc.stderr[-2000:]}")
    line = next(x for x in proc.stdout.splitlines() if x.startswith("BEFORE-JSON:"))
    return json.loads(line[len("BEFORE-JSON:"):])
