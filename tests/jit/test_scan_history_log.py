"""What a Scan keeps of its history (dsl/core/primitives/scan.py): for its pass back, a loop that
writes one row of a carried tensor per iteration keeps the tensor once and the rows it overwrote
(dsl/core/row_log.py), where it kept a copy of the tensor per iteration (XLA's first call of
`jit(grad(f))`): n^2 memory for an n-step trajectory; without a derivative, nothing."""

import io
import tracemalloc

import numpy as np
import pytest

import dsl
from dsl.core.row_log import MIN_ENTRIES, LoggedRows, StateLog


def states(n, size, rng):
    """n tensors of `size` entries, each the one before with a row or so changed, among them NaNs,
    negative zeros and one tensor changed everywhere."""
    x = rng.normal(size=(size // 4, 4))
    out = []
    for k in range(n):
        x = x.copy()
        if k == n // 2:
            x = rng.normal(size=x.shape)        # kept whole
        else:
            x[k % len(x)] = [np.nan, -0.0, 0.0, rng.normal()] if k % 3 == 0 else rng.normal(size=4)
        out.append(x)
    return out


def same_bits(a, b):
    return a.shape == b.shape and a.dtype == b.dtype and a.tobytes() == b.tobytes()


@pytest.mark.parametrize("flip", [False, True])
def test_the_log_gives_back_every_row_bit_for_bit_in_any_order(flip):
    rng = np.random.default_rng(0)
    kept = states(40, 4 * max(MIN_ENTRIES, 64), rng)
    other = [float(k) for k in range(40)]       # a number: stacked as before
    log = StateLog()
    for row in zip(kept, other):
        log.append(row)
    if flip:
        log.reverse()
        kept, other = kept[::-1], other[::-1]
    rows, numbers = log.columns([True, True], lambda values, j: np.array(values))
    assert type(rows) is LoggedRows and rows.shape == (40, *kept[0].shape)
    assert numbers.tolist() == other
    for order in (range(39, -1, -1), range(40), rng.permutation(40)):
        for k in order:
            assert same_bits(rows[int(k)], kept[k])
    assert same_bits(np.asarray(rows), np.stack(kept))
    assert all(same_bits(r, x) for r, x in zip(rows[::-1], kept[::-1]))
    assert all(same_bits(r, x) for r, x in zip(rows[5:17], kept[5:17]))
    assert all(same_bits(r, x) for r, x in zip(rows[::-1][3:9], kept[::-1][3:9]))
    # what the log holds: one tensor, the rows each iteration overwrote, one tensor kept whole
    whole = [d for d in log.deltas[0] if type(d) is np.ndarray]
    assert len(whole) == 1


def test_a_row_given_out_is_a_copy():
    log = StateLog()
    for k in range(3):
        log.append((np.full(MIN_ENTRIES, float(k)),))
    (rows,) = log.columns([True], None)
    r = rows[2]
    r[:] = 7.0
    assert rows[2][0] == 2.0 and rows[0][0] == 0.0 and rows[2][0] == 2.0


TRAJECTORY = """
fn f(a) {
    let y = zeros((N,))
    let z = zeros((N,))
    y[0] = a
    z[0] = a
    for i in range(1, N) {
        y[i] = tanh(y[i - 1]) * a + 0.1 * z[i - 1]
        z[i] = sin(z[i - 1]) * 0.5 + 0.1 * y[i]
    }
    return sum(y * y) + sum(z)
}
"""


def peak_mb(fn):
    """fn() and the most memory numpy and Python held at once while it ran, in MB."""
    tracemalloc.start()
    try:
        value = fn()
        return value, tracemalloc.get_traced_memory()[1] / 2 ** 20
    finally:
        tracemalloc.stop()


def test_xla_first_call_of_a_trajectory_under_grad_keeps_no_copy_per_iteration():
    pytest.importorskip("jax")
    n = 1500
    i = dsl.Interpreter(stdout=io.StringIO(), backend="xla")
    i.run(TRAJECTORY.replace("N", str(n)) + "let g = jit(grad(f))\nlet want = grad(f)")
    value, peak = peak_mb(lambda: i.lookup("g")(0.3))
    assert value == pytest.approx(i.lookup("want")(0.3), rel=1e-12)
    # a copy of y and of z per iteration: 2 x 1500^2 floats, 34 MB (plus the stacking's copy)
    assert peak < 12, peak
    assert i.lookup("g")(0.4) == pytest.approx(i.lookup("want")(0.4), rel=1e-12)


@pytest.mark.parametrize("expr", ["jit(f)", "jit(vmap(f))"])
def test_xla_first_call_without_a_derivative_keeps_no_history(expr):
    # the Scan XLA lowers a loop to runs on numpy while the first call stages it; no rule reads
    # its history there, which it kept whole: a copy of y and of z per iteration
    pytest.importorskip("jax")
    i = dsl.Interpreter(stdout=io.StringIO(), backend="xla")
    i.run(TRAJECTORY.replace("N", "1500") + f"let g = {expr}\nlet want = {expr[4:-1]}")
    x = np.array([0.3, 0.4]) if "vmap" in expr else 0.3
    value, peak = peak_mb(lambda: i.lookup("g")(x))
    np.testing.assert_allclose(value, i.lookup("want")(x), rtol=1e-12)
    assert peak < 12, peak
    np.testing.assert_allclose(i.lookup("g")(x), i.lookup("want")(x), rtol=1e-12)


def test_three_reverse_levels_through_a_trajectory():
    # on numpy, jit rolls a loop under three reverse levels as a Scan; the pullback's own pullback
    # reads the history whole (its rows are differentiated), so the log is made a tensor there
    src = TRAJECTORY.replace("N", str(MIN_ENTRIES + 300)) + \
        "let g3 = jit(grad(grad(grad(f))))\nlet want = grad(grad(grad(f)))"
    i = dsl.Interpreter(stdout=io.StringIO())
    i.run(src)
    for a in (0.3, 0.5):
        # written out, the same derivative (an interpreter keeping tapes)
        assert i.lookup("g3")(a) == pytest.approx(i.lookup("want")(a), rel=1e-9)


@pytest.mark.parametrize("expr", ["jit(vmap(grad(f)))", "jit(jacfwd(grad(f)))", "jit(grad(grad(f)))",
                                  "jit(grad(hessian(f)))"])
def test_a_logged_history_read_by_other_rules(backend, expr):
    # vmap, forward mode and a second reverse level read the history with their rules: the loop
    # keeps it whole there (a jvp's loop kept as a log under a reverse level gave grad(hessian)
    # a wrong value)
    src = TRAJECTORY.replace("N", str(MIN_ENTRIES + 40))
    i = dsl.Interpreter(stdout=io.StringIO(), backend=backend)
    i.run(src + f"let h = {expr}\nlet want = {expr.replace('jit(', '(', 1)}")
    x = np.array([0.3, 0.45]) if "vmap" in expr else 0.3
    for _ in range(2):
        assert np.allclose(i.lookup("h")(x), i.lookup("want")(x), rtol=1e-10, atol=0)
