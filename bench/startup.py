"""Benchmark 4: start-up time of `dg -c 'print(1)'`, and what `dg run` imports."""

import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from .report import make_row
from .timing import clock_name, median

FULL = {"reps": 21}
SMOKE = {"reps": 1}
FORBIDDEN = ("prompt_toolkit", "IPython")


def dg_command():
    """How to start dg: the `dg` script beside this Python, else `python -m dsl` (the same code)."""
    script = Path(sys.executable).parent / "dg"
    return [str(script)] if script.is_file() else [sys.executable, "-m", "dsl"]


def children_cpu():
    """CPU seconds (user + system) used so far by this process's finished children."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def timed(cmd, env):
    """Seconds one command takes to start, run and exit (its CPU time, or wall time); it must succeed."""
    cpu = clock_name() == "cpu"
    t0 = children_cpu() if cpu else time.perf_counter()
    done = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    took = (children_cpu() if cpu else time.perf_counter()) - t0
    if done.returncode != 0:
        raise RuntimeError(f"{cmd} failed ({done.returncode}): {done.stderr.decode()[-500:]}")
    return took


def bytecode_envs(cache_dir):
    """Environments with Python's bytecode cache (in cache_dir, not the repo) and without it.

    This project's machines set PYTHONDONTWRITEBYTECODE=1, so each process
    compiles dg's own modules from source again while numpy and lark load
    the .pyc files their installation wrote. An ordinary install caches
    dg's too; that is the case the target is about.
    """
    cached = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    cached["PYTHONPYCACHEPREFIX"] = cache_dir
    uncached = {k: v for k, v in os.environ.items() if k != "PYTHONPYCACHEPREFIX"}
    uncached["PYTHONDONTWRITEBYTECODE"] = "1"
    return {"cached": cached, "uncached": uncached}


def start_times(reps):
    """Median seconds of dg's and python's start, with and without bytecode cache: (cmd, cache) -> s."""
    cmds = {"dg": dg_command() + ["-c", "print(1)"],
            "python": [sys.executable, "-c", "import numpy, lark"]}
    with tempfile.TemporaryDirectory() as cache_dir:
        envs = bytecode_envs(cache_dir)
        runs = [(c, e) for e in envs for c in cmds]
        for c, e in runs:
            timed(cmds[c], envs[e])             # fills the cache, warms the file cache
        times = {run: [] for run in runs}
        for r in range(reps):
            for c, e in (runs if r % 2 == 0 else runs[::-1]):
                times[(c, e)].append(timed(cmds[c], envs[e]))
    return {run: median(ts) for run, ts in times.items()}


def imported_by_run():
    """The top-level packages `dg run` imports for a small script (from python -X importtime)."""
    with tempfile.TemporaryDirectory() as tmp:
        script = Path(tmp) / "hello.dg"
        script.write_text('let x = [1.0, 2.0]\nprint(grad(fn(v) => sum(v * v))(x))\n', encoding="utf-8")
        env = dict(os.environ, PYTHONPROFILEIMPORTTIME="1")
        done = subprocess.run(dg_command() + ["run", str(script)], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, env=env, text=True)
    if done.returncode != 0 or "[2.0, 4.0]" not in done.stdout:
        raise RuntimeError(f"dg run failed: {done.stdout[-300:]} {done.stderr[-500:]}")
    names = set()
    for line in done.stderr.splitlines():
        if line.startswith("import time:") and line.count("|") == 2:
            names.add(line.rsplit("|", 1)[1].strip().split(".")[0])
    if "dsl" not in names:
        raise RuntimeError("python -X importtime reported no imports; cannot check dg run's imports")
    return names


def run(smoke):
    """Two rows: the start-up ratio and the import check."""
    cfg = SMOKE if smoke else FULL
    t = start_times(cfg["reps"])
    ratio = t["dg", "cached"] / t["python", "cached"]
    uncached = t["dg", "uncached"] / t["python", "uncached"]
    rows = [make_row("start-up", "ms", t["dg", "cached"] * 1e3,
                     {"python -c 'import numpy, lark'": t["python", "cached"] * 1e3},
                     ratio, "python", "<= 1.5x python", None if smoke else ratio <= 1.5,
                     f"dg -c 'print(1)', {cfg['reps']} runs each, {clock_name()} time of the subprocess, "
                     f"with bytecode caching; with PYTHONDONTWRITEBYTECODE=1 (as on this project's "
                     f"machines, dg recompiles its modules at each start) dg takes "
                     f"{t['dg', 'uncached'] * 1e3:.0f} ms, {uncached:.2f}x python")]
    names = imported_by_run()
    bad = sorted(n for n in names if n in FORBIDDEN)
    rows.append(make_row("dg run imports", "packages", len(bad), {}, None, None,
                         "no prompt_toolkit or IPython", not bad,
                         f"forbidden packages imported: {', '.join(bad) or 'none'}; "
                         f"{len(names)} top-level modules imported in all"))
    return rows
