"""The benchmark suite's smoke run (tiny sizes, no thresholds) must keep working."""

import importlib.util
import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

EXPECTED = [
    "1. scalar overhead (grad)",
    "2. MLP step vs numpy",
    "2. MLP step vs autograd",
    "3. structured parameters",
    "4. start-up",
    "4. dg run imports",
    "5. parsing (dg check)",
    "6. memory growth (training loop)",
    "6. checkpoint peak memory",
    "6. checkpoint time",
    "12. projectile, jit",
    "12. projectile, eager",
    "12. projectile, first jit call",
    "12-13. projectile Hessian-vector product, jit",
    "13. projectile vmap(value_and_grad), jit",
    "12. RNN, jit",
    "12. RNN, eager",
    "12. RNN, first jit call",
    "12. RNN eager vs torch",
    "12. bouncing ball, jit",
    "13. hessian vs by rows",
    "12. jit(hessian) vs eager",
    "12. jit(grad(grad)) vs eager",
    "12. jit(hessian), first call",
    "12. jit(grad(grad)), first call",
    "13. vmap(grad) per-example",
    "training loop, jitted adam step",
]
# Rows whose dg figure is a time, a rate or a size: it must be a positive number.
POSITIVE = [name for name in EXPECTED if name not in ("4. dg run imports", "6. memory growth (training loop)")]


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
    env = {k: v for k, v in os.environ.items() if k != "DG_BENCH_BEFORE"}
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
    assert math.isfinite(rows["6. memory growth (training loop)"]["dg"])
    imports = rows["4. dg run imports"]
    assert (imports["dg"] == 0) == imports["met"]


def test_smoke_applies_no_thresholds(smoke):
    rows = by_name(smoke[1]["rows"])
    for name in EXPECTED:
        if name != "4. dg run imports":
            assert rows[name]["met"] is None, name


def test_references_present_exactly_when_installed(smoke):
    rows = by_name(smoke[1]["rows"])
    scalar, step = rows["1. scalar overhead (grad)"], rows["2. MLP step vs numpy"]
    assert step["refs"]["numpy"] > 0
    for ref in ("autograd", "torch"):
        for row in (scalar, step):
            assert (row["refs"][ref] is not None) == have(ref), (ref, row)
    rnn = rows["12. RNN, jit"]
    for ref in ("torch", "jax"):
        name = "jax.jit" if ref == "jax" else ref
        assert (rnn["refs"].get(name) is not None) == have(ref), (ref, rnn)
    assert (rows["12. RNN eager vs torch"]["ratio"] is not None) == have("torch")
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
        return [make_row("2. MLP step vs numpy", "ms/step", 8.0, {"numpy": 8.0 / step}, step, "numpy",
                         "<= 1.15x numpy", step <= 1.15, "value_and_grad"),
                make_row("3. structured parameters", "ms/step", 8.0, {}, struct, "flat", "<= 1.05x flat",
                         struct <= 1.05),
                make_row("4. no ratio", "ms", 1.0, {}, None, None, "-", None)]
    merged = median_rows([run(1.19, 1.00), run(1.08, 1.06), run(1.10, 1.02)])
    assert [r["ratio"] for r in merged] == [1.10, 1.02, None]
    assert merged[0]["met"] is True and merged[0]["refs"] == {"numpy": 8.0 / 1.10}
    assert merged[0]["note"] == "value_and_grad; median of 3 processes (ratios 1.19, 1.08, 1.1)"
    assert merged[1]["note"] == "median of 3 processes (ratios 1, 1.06, 1.02)"


def test_the_reference_of_dg_before_jit_is_measured_from_a_checkout(tmp_path):
    # DG_BENCH_BEFORE names a checkout of dg before issue 12 (bench/before.py); this checkout
    # stands in for it here, so the rows and their child process are what is tested
    out = tmp_path / "before.json"
    env = dict(os.environ, DG_BENCH_BEFORE=str(ROOT), DG_BENCH_NO_TORCH="1", DG_BENCH_NO_JAX="1")
    done = subprocess.run([sys.executable, "-m", "bench", "--smoke", "--only", "transforms,projectile",
                           "--json", str(out)], cwd=ROOT, capture_output=True, text=True, timeout=300, env=env)
    assert done.returncode == 0, done.stdout + done.stderr
    rows = by_name(json.loads(out.read_text())["rows"])
    for name in ("13. hessian vs before (by rows)", "12. jit(hessian) vs eager before",
                 "12. jit(grad(grad)) vs eager before"):
        before = rows[name]["refs"]["before issue 12"]
        assert math.isfinite(before) and before > 0 and rows[name]["ratio"] == pytest.approx(before / rows[name]["dg"])
    eager = rows["12. projectile, eager"]
    assert eager["refs"]["before issue 12"] > 0 and "before issue 12:" in eager["note"]
