"""Run dg's benchmark suite and print the table: `python -m bench` or `python bench/run.py`.

    python -m bench                 the full suite (a few minutes), writes bench/results/latest.json
    python -m bench --smoke         tiny sizes, no thresholds, seconds (the tests run it with --jobs 2)
    python -m bench --only scalar,mlp     (writes bench/results/partial.json)
    python -m bench --json out.json --markdown out.md

Each benchmark runs in a fresh process with BLAS limited to --threads threads
(default 1, for dg and every reference alike), and times by the CPU time of
that process (--clock cpu), so that the ratios compare engines rather than
how two busy cores happened to be shared at that moment.
The exit code is 1 when a benchmark failed to run (or, with --strict, when a
target was missed), else 0.
"""

import argparse
import datetime
import importlib.metadata
import json
import os
import platform
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

if __package__ in (None, ""):          # `python bench/run.py`: make the repo root importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench import readme as readme_table  # noqa: E402
from bench.report import docs_page, make_row, markdown, table, write_json  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
ORDER = ["scalar", "mlp", "startup", "parsing", "memory", "checkpoint", "projectile", "rnn", "ball", "transforms",
         "third", "trajectory", "stencil", "training", "science", "xla"]
TITLES = {"scalar": "scalar overhead", "mlp": "MLP step", "startup": "start-up",
          "parsing": "parsing", "memory": "memory growth", "checkpoint": "checkpoint",
          "projectile": "projectile", "rnn": "RNN", "ball": "bouncing ball", "transforms": "higher order and vmap", "third": "third order through a loop",
          "trajectory": "a trajectory under grad", "stencil": "a stencil written entry by entry",
          "training": "training loop", "science": "scientific programs", "xla": "the XLA backend"}
THREAD_VARS = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")


def worker_env(threads, clock):
    """The environment of a benchmark process: BLAS threads pinned, its clock, the repo importable."""
    env = dict(os.environ, DG_BENCH_CLOCK=clock)
    for var in THREAD_VARS:
        env[var] = str(threads)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT)] + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else []))
    return env


def run_worker(name, smoke, threads, clock):
    """Run one benchmark in a fresh process; its rows, or one row saying why it failed."""
    cmd = [sys.executable, "-m", "bench.worker", name] + (["--smoke"] if smoke else [])
    done = subprocess.run(cmd, cwd=ROOT, env=worker_env(threads, clock), capture_output=True, text=True)
    marked = [ln for ln in done.stdout.splitlines() if ln.startswith("BENCH-JSON:")]
    if done.returncode == 0 and marked:
        return json.loads(marked[-1][len("BENCH-JSON:"):]), True
    why = (done.stderr.strip().splitlines() or ["no output"])[-1]
    return [make_row(TITLES[name], "-", None, {}, None, None, "-", None, f"FAILED: {why}")], False


# Benchmarks run in several fresh processes, each row taken from the median one. Where
# numpy's large buffers land in memory is settled per process, and it moves one MLP step
# by up to 10% (dg and numpy alike, not always together): one process is one draw of it.
PROCESSES = {"mlp": 3}


def announce_and_run(name, args):
    """Say which benchmark starts, then run it (see run_worker) in PROCESSES[name] processes."""
    sys.stderr.write(f"running {TITLES[name]} ...\n")
    sys.stderr.flush()
    n = 1 if args.smoke else PROCESSES.get(name, 1)
    runs = []
    for _ in range(n):
        rows, fine = run_worker(name, args.smoke, args.threads, args.clock)
        if not fine:
            return rows, False
        runs.append(rows)
    return (median_rows(runs) if n > 1 else runs[0]), True


def median_rows(runs):
    """Row by row, the run whose ratio is the median, noting every run's ratio."""
    merged = []
    for i, row in enumerate(runs[0]):
        candidates = [rows[i] for rows in runs]
        if row["ratio"] is None:
            merged.append(row)
            continue
        ordered = sorted(candidates, key=lambda r: r["ratio"])
        chosen = dict(ordered[len(ordered) // 2])
        seen = ", ".join(f"{r['ratio']:.3g}" for r in candidates)
        chosen["note"] = "; ".join(x for x in (chosen["note"], f"median of {len(runs)} processes "
                                                               f"(ratios {seen})") if x)
        merged.append(chosen)
    return merged


def accelerator():
    """The GPUs the XLA rows ran on, as nvidia-smi names them, where JAX_PLATFORMS asks for one;
    None on the CPU (the default: jax_or_none keeps JAX there)."""
    if os.environ.get("JAX_PLATFORMS", "cpu") in ("", "cpu"):
        return None
    try:
        done = subprocess.run(["nvidia-smi", "--query-gpu=name,memory.total,driver_version", "--format=csv,noheader"],
                              capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return os.environ["JAX_PLATFORMS"]
    return "; ".join(line.strip() for line in done.stdout.splitlines() if line.strip()) or os.environ["JAX_PLATFORMS"]


def meta(args, started, seconds):
    """What the run was: when it started, where, with which settings."""
    versions = {"python": platform.python_version()}
    for dist in ("numpy", "autograd", "torch", "jax", "lark"):
        try:
            versions[dist] = importlib.metadata.version(dist)
        except importlib.metadata.PackageNotFoundError:
            versions[dist] = None
    return {"date": started.isoformat(timespec="seconds"),
            "smoke": args.smoke, "threads": args.threads, "clock": args.clock,
            "jobs": args.jobs, "cpus": os.cpu_count(),
            "machine": platform.platform(), "accelerator": accelerator(), "versions": versions,
            "seconds": round(seconds, 1),
            "load_average_at_end": [round(x, 2) for x in os.getloadavg()]}


def saved_gpu_run():
    """The XLA rows' saved run on a GPU (bench/results/gpu.json) and the text that explains it,
    or (None, "") where none is saved."""
    path = ROOT / "bench" / "results" / "gpu.json"
    if not path.exists():
        return None, ""
    return (json.loads(path.read_text(encoding="utf-8")),
            (ROOT / "bench" / "benchmarks_gpu.md").read_text(encoding="utf-8"))


def parse_args(argv):
    """The command line."""
    ap = argparse.ArgumentParser(prog="python -m bench", description="dg's benchmark suite")
    ap.add_argument("--smoke", action="store_true", help="tiny sizes and no thresholds (seconds)")
    ap.add_argument("--docs", action="store_true", help="write docs/benchmarks.md from the saved results and exit")
    ap.add_argument("--only", default="", help=f"comma-separated subset of: {', '.join(ORDER)}")
    ap.add_argument("--threads", type=int, default=1, help="BLAS threads for every engine (default 1)")
    ap.add_argument("--clock", choices=("cpu", "wall"), default="cpu",
                    help="time by the CPU time of the benchmark process (default: immune to other "
                         "processes' load) or by wall time")
    ap.add_argument("--jobs", type=int, default=1,
                    help="benchmarks run at once (keep 1 for real timings; more only speeds up --smoke)")
    ap.add_argument("--json", help="where to write the JSON (default bench/results/latest.json, "
                                   "or smoke.json with --smoke)")
    ap.add_argument("--markdown", help="also write the table as Markdown here")
    ap.add_argument("--strict", action="store_true", help="exit 1 when a target is missed")
    args = ap.parse_args(argv)
    names = [n.strip() for n in args.only.split(",") if n.strip()] or ORDER
    unknown = [n for n in names if n not in ORDER]
    if args.jobs < 1:
        ap.error("--jobs needs at least 1")
    if unknown:
        ap.error(f"unknown benchmark(s): {', '.join(unknown)} (choose from {', '.join(ORDER)})")
    return args, names


def main(argv=None):
    """Run the chosen benchmarks, print the table, write the JSON; the exit code."""
    args, names = parse_args(argv)
    if args.docs:
        data = json.loads((ROOT / "bench" / "results" / "latest.json").read_text(encoding="utf-8"))
        intro = (ROOT / "bench" / "benchmarks_intro.md").read_text(encoding="utf-8")
        gpu, gpu_intro = saved_gpu_run()
        (ROOT / "docs" / "benchmarks.md").write_text(docs_page(intro, data, gpu, gpu_intro), encoding="utf-8")
        readme = ROOT / "README.md"
        readme.write_text(readme_table.rewrite(readme.read_text(encoding="utf-8"), data["rows"]), encoding="utf-8")
        print("wrote docs/benchmarks.md and README.md's performance table from bench/results/latest.json")
        return 0
    started, t0 = datetime.datetime.now().astimezone(), time.perf_counter()
    rows, ok = [], True
    with ThreadPoolExecutor(max_workers=args.jobs) as pool:
        results = [pool.submit(announce_and_run, name, args) for name in names]
        for result in results:
            got, fine = result.result()
            rows += got
            ok &= fine
    info = meta(args, started, time.perf_counter() - t0)
    # latest.json holds a whole run (the docs' tables are made from it): a part goes elsewhere
    out = Path(args.json) if args.json else ROOT / "bench" / "results" / (
        "smoke.json" if args.smoke else "partial.json" if args.only else "latest.json")
    out.parent.mkdir(parents=True, exist_ok=True)
    write_json(out, info, rows)
    if args.markdown:
        Path(args.markdown).write_text(markdown(rows), encoding="utf-8")
    print(f"dg benchmarks, {info['date']}, {info['cpus']} cpus, BLAS threads {args.threads}, "
          f"{args.clock} time"
          f"{', SMOKE (tiny sizes, no thresholds)' if args.smoke else ''}\n")
    print(table(rows))
    print(f"\nwritten to {out}")
    missed = any(r["met"] is False for r in rows)
    return 1 if not ok or (args.strict and missed) else 0


if __name__ == "__main__":
    sys.exit(main())
