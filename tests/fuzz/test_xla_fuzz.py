"""The jit fuzzer's random programs (test_jit_fuzz.py) with jit compiling for XLA: every result
equals the interpreter's (to 1e-12 relative), what it prints and the errors it raises too,
whether XLA runs a recording or leaves it (or one call of it) to the numpy backend.

CI runs a bounded number of examples where JAX is installed; `DG_FUZZ_EXAMPLES=2000 pytest
tests/fuzz/test_xla_fuzz.py` runs a long random search."""

import pytest
from hypothesis import HealthCheck, given, settings
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


@settings(max_examples=fuzz_examples(24), deadline=None, database=None, derandomize=not long_run(),
          suppress_health_check=[HealthCheck.too_slow], print_blob=True)
@given(st.integers(0, 2 ** 31), st.sampled_from(CHOSEN), st.sampled_from([3, 5, 8]))
def test_random_loop_programs_on_xla_give_the_interpreters_results(seed, composition, rows):
    check_program(Writer(seed).program(), seed, composition, rows, backend="xla")


@settings(max_examples=fuzz_examples(10), deadline=None, database=None, derandomize=not long_run(),
          suppress_health_check=[HealthCheck.too_slow], print_blob=True)
@given(st.integers(0, 2 ** 31), st.sampled_from(CHOSEN), st.sampled_from([3, 5, 8]))
def test_random_while_loop_programs_on_xla_give_the_interpreters_results(seed, composition, rows):
    check_program(Writer(seed).program(with_while=True), seed, composition, rows, backend="xla")
