"""The benchmark suite's smoke run (tiny sizes, no thresholds) must keep working."""

import importlib.util
import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

EXPECTED = [
    "scalar overhead (grad)",
    "MLP step vs numpy",
    "MLP step vs autograd",
    "MLP step in float32",
    "structured parameters",
    "start-up",
    "dg run imports",
    "parsing (dg check)",
    "memory growth (training loop)",
    "checkpoint peak memory",
    "checkpoint time",
    "projectile, jit",
    "projectile, eager",
    "projectile, first jit call",
    "projectile Hessian-vector product, jit",
    "projectile vmap(value_and_grad), jit",
    "RNN, jit",
    "RNN, eager",
    "RNN, first jit call",
    "RNN eager vs torch",
    "bouncing ball, jit",
    "hessian vs by rows",
    "jit(hessian) vs eager",
    "jit(grad(grad)) vs eager",
    "jit(hessian), first call",
    "jit(grad(grad)), first call",
    "vmap(grad) per-example",
    "jit(grad(grad(grad))) through a loop, first call",
    "jit(grad(grad(grad))) through a loop, later calls",
    "trajectory under grad, later calls",
    "trajectory under grad, first call",
    "stencil sweeps, jit",
    "stencil sweeps under grad, later calls",
    "stencil sweeps under grad, first call",
    "training loop, jitted adam step",
    "GP likelihood and gradient: cholesky against loops",
    "Newton step: solve against loops",
    "Newton's solve against loops",
    "HMC with keys, first call",
    "HMC with keys, later calls",
    "CNN loss and gradient",
]
# bench/xla.py's rows, or one saying JAX is missing
XLA_ROWS = [f'{name}, jit(backend="xla")' for name in ("projectile", "RNN", "MLP step", "attention block", "hessian",
                                                         "grad(grad)", "RK4 ODE fit", "geometric mean",
                                                         "projectile first call")]
EXPECTED += XLA_ROWS if importlib.util.find_spec("jax") and not os.environ.get("DG_BENCH_NO_JAX") \
    else ['jit(backend="xla")']
# Rows whose dg figure is a time, a rate or a size: it must be a positive number.
POSITIVE = [name for name in EXPECTED if name not in ("dg run imports", "memory growth (training loop)",
                                                     'jit(backend="xla")')]


def have(module):
    """Whether an optional reference is installed (and, for torch, not switched off)."""
    if module == "torch" and os.environ.get("DG_BENCH_NO_TORCH"):
        return False
    if module == "jax" and os.environ.get("DG_BENCH_NO_JAX"):
        return False
    return importlib.util.find_spec(module) is not None


@pytest.fixture(scope="module")
def smoke(tmp_path_factory):
    """Run `python -m bench --smoke` once; (exit code, stdout, parsed JSON)."""
    out = tmp_path_factory.mktemp("bench") / "smoke.json"
    env = dict(os.environ)
    done = subprocess.run([sys.executable, "-m", "bench", "--smoke", "--jobs", "2", "--json", str(out)],
                          cwd=ROOT, capture_output=True, text=True, timeout=300, env=env)
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout, json.loads(out.read_text())


def by_name(rows):
    """Rows keyed by benchmark name."""
    return {r["benchmark"]: r for r in rows}


def test_every_benchmark_has_a_row_in_json_and_table(smoke):
    stdout, data = smoke
    assert [r["benchmark"] for r in data["rows"]] == EXPECTED
    for name in EXPECTED:
        assert name in stdout
    assert data["meta"]["smoke"] is True
    assert not any("FAILED" in r["note"] for r in data["rows"])


def test_figures_are_sane(smoke):
    rows = by_name(smoke[1]["rows"])
    for name in POSITIVE:
        value = rows[name]["dg"]
        assert isinstance(value, (int, float)) and math.isfinite(value) and value > 0, (name, value)
    for row in rows.values():
        for ref, value in row["refs"].items():
            assert value is None or (math.isfinite(value) and value > 0 or ref.startswith("RSS")), (row, ref)
        if row["ratio"] is not None:
            assert math.isfinite(row["ratio"]) and row["ratio"] > 0, row
    assert math.isfinite(rows["memory growth (training loop)"]["dg"])
    imports = rows["dg run imports"]
    assert (imports["dg"] == 0) == imports["met"]


def test_smoke_applies_no_thresholds(smoke):
    rows = by_name(smoke[1]["rows"])
    for name in EXPECTED:
        if name != "dg run imports":
            assert rows[name]["met"] is None, name


def test_references_present_exactly_when_installed(smoke):
    rows = by_name(smoke[1]["rows"])
    scalar, step = rows["scalar overhead (grad)"], rows["MLP step vs numpy"]
    assert step["refs"]["numpy"] > 0
    for ref in ("autograd", "torch"):
        for row in (scalar, step):
            assert (row["refs"][ref] is not None) == have(ref), (ref, row)
    rnn = rows["RNN, jit"]
    for ref in ("torch", "jax"):
        name = "jax.jit" if ref == "jax" else ref
        assert (rnn["refs"].get(name) is not None) == have(ref), (ref, rnn)
    assert (rows["RNN eager vs torch"]["ratio"] is not None) == have("torch")
    if not have("autograd"):
        assert "autograd not installed" in scalar["note"]
        assert scalar["ratio"] is None
    else:
        assert scalar["ratio"] == pytest.approx(scalar["dg"] / scalar["refs"]["autograd"])


def test_a_benchmark_run_in_several_processes_reports_each_row_from_its_median_process():
    sys.path.insert(0, str(ROOT))
    from bench.report import make_row
    from bench.run import median_rows

    def run(step, struct):
        return [make_row("MLP step vs numpy", "ms/step", 8.0, {"numpy": 8.0 / step}, step, "numpy",
                         "<= 1.15x numpy", step <= 1.15, "value_and_grad"),
                make_row("structured parameters", "ms/step", 8.0, {}, struct, "flat", "<= 1.05x flat",
                         struct <= 1.05),
                make_row("no ratio", "ms", 1.0, {}, None, None, "-", None)]
    merged = median_rows([run(1.19, 1.00), run(1.08, 1.06), run(1.10, 1.02)])
    assert [r["ratio"] for r in merged] == [1.10, 1.02, None]
    assert merged[0]["met"] is True and merged[0]["refs"] == {"numpy": 8.0 / 1.10}
    assert merged[0]["note"] == "value_and_grad; median of 3 processes (ratios 1.19, 1.08, 1.1)"
    assert merged[1]["note"] == "median of 3 processes (ratios 1, 1.06, 1.02)"
