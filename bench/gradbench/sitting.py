"""Run every GradBench eval against dg (numpy and XLA backends) and against GradBench's own jax
and pytorch tools, in one sitting, saving one log per tool and eval for `table.py`.

    python -m bench.gradbench.sitting GRADBENCH_CHECKOUT EVAL_PYTHON [--only lse,gmm] [--tools dg,jax]

EVAL_PYTHON is a Python with the evals' own dependencies (numpy, scipy, pydantic,
dataclasses-json); the tools run under this Python, which needs jax and torch for theirs (a tool
that is not installed is skipped). Every tool runs on one thread. Logs go to
bench/results/gradbench/TOOL_EVAL.log; `python -m bench.gradbench.table --docs` turns them into
docs/gradbench.md's tables.
"""

import argparse
import importlib.util
import io
import os
import shlex
import sys
import tempfile
from pathlib import Path

from .pipe import pipe

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "bench" / "results" / "gradbench"
EVALS = "hello lse llsq det ode gmm kmeans lstm particle saddle ba ht".split()
# jax-waited: GradBench's jax tool with each timed call waiting for its result, so that its times are of finished
# work (waited.py); jax: the tool as GradBench runs it
TOOLS = ("dg", "xla", "jax", "jax-waited", "pytorch")
# the largest hand-tracking inputs are Git LFS files a plain checkout lacks, and take dg minutes each
EVAL_ARGS = {"ht": "--max 11"}
ONE_THREAD = {"OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1",
              "XLA_FLAGS": "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1"}


def tool_command(tool, checkout):
    """The shell command that starts `tool`, or None where it is not installed here."""
    py = shlex.quote(sys.executable)
    if tool == "dg":
        return f"{py} -m bench.gradbench"
    if tool == "xla":
        return f"DG_BACKEND=xla {py} -m bench.gradbench" if importlib.util.find_spec("jax") else None
    module = {"jax": "jax", "jax-waited": "jax", "pytorch": "torch"}[tool]
    if importlib.util.find_spec(module) is None:
        return None
    run = shlex.quote(str(checkout / 'python' / 'gradbench' / 'gradbench' / 'tools' / own(tool) / 'run.py'))
    return f"{py} -m bench.gradbench.waited {run}" if tool == "jax-waited" else f"{py} {run}"


def own(tool):
    """The GradBench tool that `tool` runs (jax-waited runs jax's)."""
    return "jax" if tool == "jax-waited" else tool


# GradBench marks these tools failing on these evals (pytorch's ba ran for minutes in 6 GB of
# memory without finishing an evaluation)
FAILING = {("pytorch", "ba"), ("pytorch", "ht")}


def implements(tool, checkout, name):
    """Whether GradBench's own tool has a working module for the eval (dg's have them all)."""
    if tool in ("dg", "xla"):
        return True
    if (own(tool), name) in FAILING:
        return False
    return (checkout / "python" / "gradbench" / "gradbench" / "tools" / own(tool) / f"{name}.py").exists()


def main(argv=None):
    """Command line: see the module docstring."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("checkout", type=Path)
    parser.add_argument("eval_python")
    parser.add_argument("--only", default=",".join(EVALS))
    parser.add_argument("--tools", default=",".join(TOOLS))
    args = parser.parse_args(argv)
    checkout = args.checkout.resolve()
    os.environ.update(ONE_THREAD)
    # dg's compiled XLA programs kept on disk would spare the xla tool compilations the jax tool
    # pays on every run (JAX keeps none by default): the sitting starts from an empty folder
    os.environ.setdefault("DG_XLA_CACHE", tempfile.mkdtemp(prefix="dg-xla-sitting-"))
    os.environ["PYTHONPATH"] = os.pathsep.join([str(checkout / "python" / "gradbench"), str(ROOT)])
    RESULTS.mkdir(parents=True, exist_ok=True)
    for name in args.only.split(","):
        # an eval reads its data and the golden tool by paths relative to the checkout
        evaluate = (f"cd {shlex.quote(str(checkout))} && {shlex.quote(args.eval_python)} "
                    f"python/gradbench/gradbench/evals/{name}/run.py {EVAL_ARGS.get(name, '')}")
        for tool in args.tools.split(","):
            command = tool_command(tool, checkout)
            if command is None or not implements(tool, checkout, name):
                continue
            log = io.StringIO()
            pipe(evaluate, command, out=log)
            (RESULTS / f"{tool}_{name}.log").write_text(log.getvalue())
            print(f"{tool:8s} {log.getvalue().splitlines()[-1]}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
