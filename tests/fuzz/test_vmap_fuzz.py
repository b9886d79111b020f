"""Differential fuzzing of vmap: the jit fuzz's random loop programs (tests/fuzz/test_jit_fuzz.py, without
prints and random draws, which a run per example repeats) mapped over one argument or two, against
a Python loop over the examples. Batched operations, conditions on batched values (a run per
example), nested vmap and vmap of grad must give each example's own result.

CI runs a bounded number of examples (derandomized); DG_FUZZ_EXAMPLES runs a long random search.
"""

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import dsl
from dsl.errors import DgError
from dsl.transform.jit import rolling
from fuzz_harness import fuzz_examples, long_run
from test_jit_fuzz import Writer, leaves

pytestmark = pytest.mark.filterwarnings("ignore:The recursion limit will not be reset")

BATCH = 3


class QuietWriter(Writer):
    """The jit fuzz's programs without effects."""

    def statement(self, nested=False):
        """A statement that neither prints nor draws."""
        while True:
            s = super().statement(nested)
            if "print" not in s and "randn" not in s:
                return s


# (the vmapped function, which arguments carry the batch)
MODES = [
    ("vmap(f, in_axes=(0, none, none, none))", (0,)),
    ("vmap(f, in_axes=(none, 0, none, none))", (1,)),
    ("vmap(f, in_axes=(none, none, 0, 0))", (2, 3)),
    ("vmap(grad(f, argnums=(0, 1)), in_axes=(0, none, none, none))", (0,)),
]


def example_args(rng, rows):
    """One example's arguments: p, w, m, xs."""
    return [float(rng.uniform(-1, 1)), rng.uniform(-1, 1, 3), rng.uniform(-1, 1, (3, 3)),
            rng.uniform(-1, 1, (rows, 3))]


@settings(max_examples=fuzz_examples(40), deadline=None, database=None, derandomize=not long_run(),
          suppress_health_check=[HealthCheck.too_slow], print_blob=True)
@given(st.integers(0, 2 ** 31), st.sampled_from(MODES), st.sampled_from([3, 5]), st.booleans())
def test_random_loop_programs_under_vmap_give_each_examples_result(seed, mode, rows, rolled):
    # rolled: vmap stages the programs' short loops once (as it does loops of 32 iterations and
    # more) and batches them by Loop's rule; else it writes them out
    saved = rolling.VMAP_MIN_ITEMS
    rolling.VMAP_MIN_ITEMS = rolling.MIN_ITEMS if rolled else saved
    try:
        check_under_vmap(seed, mode, rows)
    finally:
        rolling.VMAP_MIN_ITEMS = saved


def check_under_vmap(seed, mode, rows):
    """A random program under one vmap mode gives each example's result (or both raise)."""
    source = QuietWriter(seed).program()
    mapped, axes = mode
    i = dsl.Interpreter(seed=0)
    i.run(source + f"\nlet g = {mapped}\nlet one = {'grad(f, argnums=(0, 1))' if 'grad' in mapped else 'f'}\n")
    g, one = i.lookup("g"), i.lookup("one")
    rng = np.random.default_rng(seed)
    shared = example_args(rng, rows)
    examples = [example_args(rng, rows) for _ in range(BATCH)]
    per = [[e[k] if k in axes else shared[k] for k in range(4)] for e in examples]
    try:
        want = [one(*args) for args in per]
    except DgError:
        with pytest.raises(DgError):
            g(*[np.stack([np.asarray(e[k]) for e in examples]) if k in axes else shared[k] for k in range(4)])
        return
    batched = [np.stack([np.asarray(e[k]) for e in examples]) if k in axes else shared[k] for k in range(4)]
    got = g(*batched)
    got_rows = [leaves([np.asarray(part)[b] for part in (got if isinstance(got, tuple) else (got,))])
                for b in range(BATCH)]
    for b in range(BATCH):
        assert np.allclose(got_rows[b], leaves(want[b]), rtol=1e-9, atol=1e-12, equal_nan=True), \
            f"example {b}: {got_rows[b]} != {leaves(want[b])}\n{source}"
