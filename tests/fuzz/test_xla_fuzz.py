"""The jit fuzzer's random programs (test_jit_fuzz.py) with jit compiling for XLA: every result
equals the interpreter's (to 1e-12 relative), what it prints and the errors it raises too,
whether XLA runs a recording or leaves it (or one call of it) to the numpy backend.

CI runs a bounded number of examples where JAX is installed; `DG_FUZZ_EXAMPLES=2000 pytest
tests/fuzz/test_xla_fuzz.py` runs a long random search."""

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from fuzz_harness import fuzz_examples, long_run
from test_jit_fuzz import COMPOSITIONS, Writer, check_program

pytest.importorskip("jax")

# XLA compiles each recording: a program under three derivative levels takes it 5-20 s, so the
# bounded run leaves those compositions to the long one
THIRD_ORDER = ("grad(grad(grad(", "jvp(grad(grad(")
SHORT = [c for c in COMPOSITIONS if not any(t in c[0] for t in THIRD_ORDER)]
CHOSEN = COMPOSITIONS if long_run() else SHORT
pytestmark = pytest.mark.filterwarnings("ignore:The recursion limit will not be reset")


@settings(max_examples=fuzz_examples(12), deadline=None, database=None, derandomize=not long_run(),
          suppress_health_check=[HealthCheck.too_slow], print_blob=True)
@given(st.integers(0, 2 ** 31), st.sampled_from(CHOSEN), st.sampled_from([3, 5, 8]))
def test_random_loop_programs_on_xla_give_the_interpreters_results(seed, composition, rows):
    check_program(Writer(seed).program(), seed, composition, rows, backend="xla")


@settings(max_examples=fuzz_examples(10), deadline=None, database=None, derandomize=not long_run(),
          suppress_health_check=[HealthCheck.too_slow], print_blob=True)
@given(st.integers(0, 2 ** 31), st.sampled_from(CHOSEN), st.sampled_from([3, 5, 8]))
# a for loop nested in another is a Scan on XLA: taken as batched in every field, the primal
# carry of the outer loop came out batched under jacfwd, and its print ran once per column
@example(857363132, ("jacfwd(jit(f), argnums=1)", "jacfwd(f, argnums=1)"), 3)
def test_random_while_loop_programs_on_xla_give_the_interpreters_results(seed, composition, rows):
    check_program(Writer(seed).program(with_while=True), seed, composition, rows, backend="xla")


@settings(max_examples=fuzz_examples(6), deadline=None, database=None, derandomize=not long_run(),
          suppress_health_check=[HealthCheck.too_slow], print_blob=True)
@given(st.integers(0, 2 ** 31), st.sampled_from(CHOSEN), st.sampled_from([3, 5, 8]), st.booleans())
def test_random_programs_drawing_from_keys_on_xla_give_the_interpreters_results(seed, composition, rows, w):
    # XLA calls the keyed draws back to numpy's kernels, from threads of its own
    check_program(Writer(seed, keys=True).program(with_while=w), seed, composition, rows, backend="xla")


def test_a_loop_written_out_under_three_derivatives_runs_on_xla_in_linear_time():
    """This program's loop (a break, under jvp(grad(grad))) is written out into a long chain of
    elementwise steps that share their operands. XLA's newer CPU fusion emitters recomputed such
    a chain once per use: seconds at five iterations, no end at eight. dg compiles with the
    emitters that compute each value once (runtime.compiler_options): seven iterations check in
    seconds. In a child process, because a running XLA call cannot be interrupted."""
    import os
    import subprocess
    import sys

    here = os.path.dirname(os.path.abspath(__file__))
    code = ("from test_jit_fuzz import COMPOSITIONS, Writer, check_program\n"
            "c = next(c for c in COMPOSITIONS if c[0].startswith('jit(fn(p, w, m, xs) => jvp(grad(grad(f))'))\n"
            "check_program(Writer(4132).program(), 4132, c, 7, backend='xla')\n")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([here, os.path.dirname(here), os.environ.get("PYTHONPATH", "")]))
    try:
        done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=240)
    except subprocess.TimeoutExpired:
        raise AssertionError("the XLA call ran for four minutes") from None
    assert done.returncode == 0, done.stderr[-3000:]
