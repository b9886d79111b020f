"""Backward may overwrite a cotangent in place only when nothing else refers to it (tape.get_owned())."""

import numpy as np
import pytest

import dsl
from dsl.core import tape
from dsl.core.primitives.namespaces import EAGER

RNG = np.random.default_rng(7)


def grad_of(src, name, *args, argnums=0):
    """The gradient of dg function `name` defined in `src`."""
    interp = dsl.Interpreter()
    interp.run(src)
    return interp.grad(name, argnums=argnums)(*args)


def test_the_in_place_path_is_taken_for_a_private_cotangent(monkeypatch):
    # a primitive's plain reverse step is generated on its first use, by a call that holds its
    # arguments once more (registry._built_on_first_call): that first pass of the process reuses
    # nothing, so the pass is run once before looking (alone, this test had seen only that one)
    grad_of("fn f(x, w) { return sum(relu(x @ w) * 2.0) }", "f", np.ones((4, 3)), np.ones((3, 5)), argnums=1)
    hits = []
    real = EAGER.cmul

    def spy(g, c):
        hits.append(g is tape.get_owned())
        return real(g, c)
    monkeypatch.setattr(EAGER, "cmul", spy)
    x, w = RNG.standard_normal((4, 3)), RNG.standard_normal((3, 5))
    g = grad_of("fn f(x, w) { return sum(relu(x @ w) * 2.0) }", "f", x, w, argnums=1)
    assert hits == [True]
    np.testing.assert_allclose(g, x.T @ ((x @ w > 0) * 2.0))


@pytest.mark.parametrize("body, expected", [
    # Add hands the same cotangent to both branches: neither may overwrite it
    # (the * 3.0 makes the cotangent a fresh array, the kind a rule could be allowed to reuse)
    ("sum((relu(x) + relu(x * 2.0)) * 3.0)", lambda x: (x > 0) * 3.0 + (x > 0) * 6.0),
    ("sum((relu(x) + abs(x)) * 3.0)", lambda x: (x > 0) * 3.0 + np.sign(x) * 3.0),
    # fan-out of one value into two uses
    ("sum(relu(x) * 3.0) + sum(relu(x))", lambda x: (x > 0) * 4.0),
    ("sum(relu(relu(x) - 0.5))", lambda x: ((x > 0.5)) * 1.0),
])
def test_shared_cotangents_are_not_overwritten(body, expected):
    x = RNG.standard_normal((6, 5))
    g = grad_of(f"fn f(x) {{ return {body} }}", "f", x)
    np.testing.assert_allclose(g, expected(x))


def test_a_seeded_cotangent_is_not_overwritten():
    # jacobian seeds backward with rows of an identity matrix that it keeps using
    x = RNG.standard_normal(5)
    interp = dsl.Interpreter()
    interp.run("fn f(x) { return relu(x) * 2.0 }")
    interp.set("x0", x)
    np.testing.assert_allclose(interp.eval("jacobian(f)(x0)"), np.diag((x > 0) * 2.0))
