"""Loading the dg programs and the optional references (autograd, torch, jax)."""

import os
import subprocess
import sys
from pathlib import Path

PROGRAMS = Path(__file__).resolve().parent / "programs"


def dg_program(name, keep_tape=False):
    """A fresh interpreter that has run bench/programs/NAME.dg, set up as `dg run` sets it up
    (with keep_tape, as the REPL sets it up: loops under grad written out, dsl/transform/jit/eager_loops.py)."""
    import dsl
    # keep_tape=False and numerics checks on: what `dg run` uses (dsl/cli.py).
    interp = dsl.Interpreter(seed=0, keep_tape=keep_tape)
    interp.run_file(PROGRAMS / f"{name}.dg")
    return interp


def autograd_or_none():
    """HIPS autograd, or None when it is not installed."""
    try:
        import autograd
        import autograd.numpy  # noqa: F401  (checks the numpy front end loads too)
    except ImportError:
        return None
    return autograd


def torch_or_none():
    """PyTorch with as many threads as numpy's BLAS gets, or None when it is not installed."""
    if os.environ.get("DG_BENCH_NO_TORCH"):
        return None
    try:
        import torch
    except ImportError:
        return None
    torch.set_num_threads(int(os.environ.get("OMP_NUM_THREADS", "1")))
    return torch


MISSING_AUTOGRAD = "autograd not installed (pip install -e '.[bench]'); its reference was skipped"
MISSING_TORCH = "torch not installed; its reference was skipped"


def jax_or_none():
    """JAX in float64 with one compute thread on the CPU, or None when it is not installed. On the
    CPU unless JAX_PLATFORMS names another platform (`JAX_PLATFORMS=cuda` times a GPU)."""
    if os.environ.get("DG_BENCH_NO_JAX"):
        return None
    if int(os.environ.get("OMP_NUM_THREADS", "1")) == 1:
        # before jax is imported: XLA's CPU backend then runs its kernels on one thread
        os.environ.setdefault("XLA_FLAGS", "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1")
    try:
        import jax
    except ImportError:
        return None
    jax.config.update("jax_enable_x64", True)
    if not os.environ.get("JAX_PLATFORMS"):
        jax.config.update("jax_platforms", "cpu")
    return jax


MISSING_JAX = "jax not installed (pip install jax); its reference was skipped"


def printed_by_new_process(code, **env):
    """The numbers a Python program prints, run in a new process (this checkout on its path,
    `env` added to the environment): first calls measured where nothing is compiled or cached yet."""
    path = os.pathsep.join([os.getcwd()] + ([os.environ["PYTHONPATH"]] if os.environ.get("PYTHONPATH") else []))
    done = subprocess.run([sys.executable, "-c", code], env=dict(os.environ, PYTHONPATH=path, **env),
                          capture_output=True, text=True, check=True)
    return [float(v) for v in done.stdout.split()]
