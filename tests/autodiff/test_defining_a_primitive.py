"""A primitive defined from outside dg's own modules (here, in this file) is seen by every
transformation at once: grad, jvp, vmap, jit and their compositions, with a loud error for a
rule it was not given. This is the recipe of docs/architecture.md, checked."""

import numpy as np
import pytest

import dsl
from dsl.core.tape import Box
from dsl.errors import DgError
from dsl.core.primitives.batching import ELEMENTWISE
from dsl.core.primitives.registry import PRIMS, define, remove


def _softplus(x):
    """The kernel: softplus on plain values; a box of an outer trace binds there."""
    if type(x) is Box:
        return SOFTPLUS.bind(x)
    return np.logaddexp(0.0, x) if type(x) is np.ndarray else float(np.logaddexp(0.0, x))


def _sigmoid(ns, ans, x):
    """softplus' = sigmoid, written with the rule namespace so outer levels record it."""
    return ns.div(1.0, ns.add(1.0, ns.exp(ns.neg(x))))


SOFTPLUS = None


@pytest.fixture
def interp():
    """An interpreter with `my_softplus`, a primitive this file defines (and removes after)."""
    global SOFTPLUS
    SOFTPLUS = define("MySoftplus", _softplus, partials=(_sigmoid,), batch=ELEMENTWISE, keeps_nan=True)
    no_jvp = define("MyOnlyReverse", lambda x: x * 2.0 if type(x) is not Box else PRIMS["MyOnlyReverse"].bind(x),
                    vjp=(lambda ns, g, ans, x: ns.mul(g, 2.0),))
    try:
        i = dsl.Interpreter(seed=0)
        i.bind("my_softplus", lambda x: SOFTPLUS.bind(x))
        i.bind("my_double", lambda x: no_jvp.bind(x))
        yield i
    finally:
        remove("MySoftplus")
        remove("MyOnlyReverse")


def sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


def test_a_primitive_defined_here_has_grad_jvp_vmap_and_jit(interp):
    interp.run("let x = [-1.0, 0.0, 2.0]\n"
               "fn f(v) { return sum(my_softplus(v) * v) }\n"
               "let r = (my_softplus(0.5), grad(f)(x), jvp(my_softplus, (x,), (ones(3),))[1],\n"
               "         vmap(grad(fn(t) => my_softplus(t)))(x), jit(grad(f))(x), grad(jit(f))(x),\n"
               "         hessian(fn(t) => my_softplus(t))(0.0), jit(vmap(my_softplus))([[1.0], [2.0]]))")
    value, g, t, vg, jg, gj, h, jv = interp.lookup("r")
    x = np.array([-1.0, 0.0, 2.0])
    want_g = sigmoid(x) * x + np.logaddexp(0.0, x)
    assert value == pytest.approx(np.logaddexp(0.0, 0.5), abs=1e-15)
    for got in (g, jg, gj):
        np.testing.assert_allclose(got, want_g, rtol=1e-14)
    np.testing.assert_allclose(t, sigmoid(x), rtol=1e-14)
    np.testing.assert_allclose(vg, sigmoid(x), rtol=1e-14)
    assert h == pytest.approx(0.25, abs=1e-15)      # sigmoid'(0), through the rule's own derivative
    np.testing.assert_allclose(jv, np.logaddexp(0.0, [[1.0], [2.0]]), rtol=1e-15)


def test_a_rule_a_primitive_was_not_given_is_a_loud_error(interp):
    interp.run("let g = grad(fn(x) => my_double(x) * x)(3.0)")
    assert interp.lookup("g") == 12.0
    with pytest.raises(DgError) as info:
        interp.run("jvp(my_double, (1.0,), (1.0,))")
    assert info.value.kind == "grad" and "MyOnlyReverse has no rule for forward mode (jvp)" in info.value.message


def test_removing_a_primitive_leaves_no_trace():
    define("Passing", lambda x: x)
    remove("Passing")
    assert "Passing" not in PRIMS
    from dsl.core import tape
    assert all("Passing" not in table for table in (tape.IMPLS, tape.PULLBACKS, tape.PUSHFORWARDS, tape.BATCHES))
