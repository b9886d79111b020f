"""Each primitive's `emit` templates (the one-line code jit generates for it) compute what its
kernel computes, on numbers (zeros of both signs, infinities, NaN, bools) and on tensors."""

import itertools
import math
import re
import string

import numpy as np
import pytest

import dsl
from dsl.core.stage import kind_of
from dsl.backends import kernels as _kernels
from dsl.backends.codegen import _Writer, _expression     # the generated code's namespace and lines
from dsl.core.primitives.registry import PRIMS
from dsl.errors import DgError

NUMBERS = [0.0, -0.0, 1.5, -2.0, 3.0, math.inf, -math.inf, math.nan, True, False]


def _templates(flavour):
    """(name, template, arity) for every primitive whose `flavour` template has only positional slots."""
    out = []
    for name, prim in sorted(PRIMS.items()):
        emit = prim.emit
        if emit is None:
            continue
        template = emit if type(emit) is str else emit.get(flavour)
        if callable(template):      # chosen by the arguments' kinds: MatMul's (tested below), Where's on numbers
            template = template(("bool", "float", "float") if flavour == "float" else
                                (kind_of(np.ones((2, 4))), kind_of(np.ones((4, 2)))))
        if template is None:
            continue
        fields = {f for _, f, _, _ in string.Formatter().parse(template) if f is not None}
        if not fields or not all(re.fullmatch(r"\d+", f) for f in fields):
            continue        # named options (axis=, shape=): their own tests in test_jit.py
        out.append((name, template, max(int(f) for f in fields) + 1))
    return out


def _same(got, want):
    """Equal values of equal kinds (NaN equal to NaN, a bool not equal to a float)."""
    if type(want) is np.ndarray or type(got) is np.ndarray:
        got, want = np.asarray(got), np.asarray(want)
        return got.shape == want.shape and got.dtype.kind == want.dtype.kind and np.array_equal(got, want,
                                                                                                 equal_nan=True)
    if (type(got) is bool) != (type(want) is bool):
        return False
    if type(want) is float and math.isnan(want):
        return type(got) is float and math.isnan(got)
    return got == want and (got != 0 or math.copysign(1, got) == math.copysign(1, want))


def _kernel(prim, args):
    """The kernel's value, or the exception type it raised."""
    try:
        return prim.impl(*args)
    except Exception as e:      # noqa: BLE001  (compared with the template's own failure)
        return type(e)


@pytest.mark.parametrize("name,template,arity", _templates("float"), ids=lambda v: v if type(v) is str else "")
def test_number_templates_agree_with_kernels(name, template, arity):
    prim = PRIMS[name]
    checked = 0
    for args in itertools.product(NUMBERS, repeat=arity):
        want = _kernel(prim, args)
        if type(want) is type and issubclass(want, Exception):
            continue        # the interpreter reports it; codegen.template_for is not asked for these kinds
        if type(want) not in (float, bool):
            continue        # template_for gives a number template only for a float or bool result
        try:
            got = _generated(name, args, want, constant=lambda a: False)
        except (ZeroDivisionError, OverflowError, ValueError) as e:
            pytest.fail(f"{name}{args}: the template {template!r} raised {e!r}, the kernel gave {want!r}")
        if got is None:
            continue        # this kind of argument takes the kernel itself
        assert _same(got, want), f"{name}{args}: template {template!r} gives {got!r}, the kernel {want!r}"
        checked += 1
    assert checked > 0 or name == "MatMul"      # numbers have no matrix product


def _arrays(arity):
    """Argument tuples of tensors (and numbers beside them) with infinities, NaN and zeros."""
    rng = np.random.default_rng(0)
    x = np.array([0.0, -0.0, 1.5, -2.0, np.inf, -np.inf, np.nan, 0.25])
    ys = [rng.permutation(x) for _ in range(arity)]
    return [tuple(ys), tuple(y > 0 for y in ys), (ys[0] > 0,) + tuple(ys[1:]), tuple(ys[:-1]) + (ys[-1] > 0,),
            (ys[0],) + tuple(2.0 for _ in ys[1:]), (ys[0],) + tuple(2 for _ in ys[1:]),
            (ys[0],) + tuple(3 for _ in ys[1:])]


def _generated(name, args, out, constant=lambda a: type(a) is not np.ndarray):
    """The right-hand side codegen writes for primitive `name` on these arguments (staged values,
    but those `constant` picks: by default the numbers beside tensors), evaluated; None where it
    calls the kernel instead."""
    w = _Writer()
    refs = [-1 if constant(a) else i for i, a in enumerate(args)]
    kinds = {i: kind_of(a) for i, a in enumerate(args) if refs[i] >= 0}
    kinds["out"] = kind_of(out)
    names = [f"v{r}" if r >= 0 else w.const(c) for r, c in zip(refs, args)]
    text = _expression(w, name, names, refs, list(args), None, kinds["out"], kinds)
    if text.startswith("c"):        # a constant: the kernel itself
        return None
    with np.errstate(all="ignore"):
        return eval(text, dict(w.consts), {f"v{r}": a for r, a in zip(refs, args) if r >= 0})


@pytest.mark.parametrize("name,template,arity", _templates("array"), ids=lambda v: v if type(v) is str else "")
def test_array_templates_agree_with_kernels(name, template, arity):
    prim = PRIMS[name]
    checked = 0
    for args in _arrays(arity):
        if name == "MatMul":
            args = tuple(np.nan_to_num(a, posinf=3.0, neginf=-3.0).reshape((2, 4) if i == 0 else (4, 2))
                         for i, a in enumerate(args) if type(a) is np.ndarray)
            if len(args) < 2:
                continue
        if name in ("Nz", "NzKept"):       # r is always the product of the other two
            with np.errstate(all="ignore"):
                args = args[:2] + (np.multiply(args[0], args[1]) * 1.0,)
        want = _kernel(prim, args)
        if type(want) is type:
            continue
        got = _generated(name, args, want)
        if got is None:
            continue
        assert _same(got, want), f"{name}{args}: generated code gives {got!r}, the kernel {want!r}"
        checked += 1
    assert checked > 0


def test_a_batch_of_outer_products_is_generated_as_the_kernel_computes_it():
    # per-example gradients of a dense layer: (n, m, 1) @ (n, 1, k), which the kernel computes as a
    # broadcast product (2x numpy.matmul's speed) with matmul's bits, the sign of a zero included
    rng = np.random.default_rng(5)
    a, b = rng.standard_normal((4, 300, 1)), rng.standard_normal((4, 1, 300))
    a[0, 0, 0], b[1, 0, 3] = -0.0, 0.0
    want = PRIMS["MatMul"].impl(a, b)
    w = _Writer()
    kinds = {0: kind_of(a), 1: kind_of(b)}
    text = _expression(w, "MatMul", ["v0", "v1"], (0, 1), [None, None], None, kind_of(want), kinds)
    assert text.startswith("K.matmul(")
    got = eval(text.replace("K.matmul(", "K_matmul("), {**w.consts, "K_matmul": _kernels.matmul}, {"v0": a, "v1": b})
    assert _same(got, want) and np.array_equal(np.signbit(got), np.signbit(np.matmul(a, b)))
    small = _expression(w, "MatMul", ["v0", "v1"], (0, 1), [None, None], None, kind_of(want[:, :2, :2]),
                        {0: kind_of(a[:, :2]), 1: kind_of(b[:, :, :2])})
    assert small == "(v0 @ v1)"     # below the kernel's size for a broadcast product: numpy's operator


def test_floats_stacked_as_a_vector_are_generated_as_the_kernel_computes_them():
    # a state written as a row ([x, v]) in a loop: the kernel's checks cost a loop over a
    # trajectory most of its time; floats only (ints and bools go to the kernel)
    prim = PRIMS["Stack"]
    for values in ([1.5, -0.0], [math.nan, math.inf, 2.0], [3.0]):
        kinds = ["float"] * len(values)
        w = _Writer()
        line = _expression(w, "Stack", [f"a{j}" for j in range(len(values))], [0] * len(values), [None] * len(values),
                           {"axis": 0}, kind_of(np.zeros(len(values))), kinds)
        assert "np.array" in line
        got = eval(line, dict(w.consts, **{f"a{j}": v for j, v in enumerate(values)}))
        assert _same(got, prim.impl(*values, axis=0))
    assert prim.emit["from_float"](["float", "int"]) is None and prim.emit["from_float"](["bool"]) is None


@pytest.mark.parametrize("op", ["Add", "Sub", "Mul"])
def test_int_arithmetic_is_pythons_operator_for_small_ints_and_the_kernel_past_them(op):
    # a loop's i - 1 or 2 * k + 1 called the kernel, which checks that the result's length is
    # within dg's limit: operands below the bound cannot pass it
    prim = PRIMS[op]
    w = _Writer()
    text = _expression(w, op, ["v0", "v1"], (0, 1), [None, None], None, "int", {0: "int", 1: "int"})
    assert text.startswith("((v0 ")
    for a, b in [(7, -3), (-2 ** 30, 5), (2 ** 70, 3), (-(2 ** 80), 2 ** 40), (0, 0)]:
        assert eval(text, dict(w.consts), {"v0": a, "v1": b}) == prim.impl(a, b)
    huge = 10 ** 4299      # 4,300 digits: dg's longest int; ten times it is past the limit
    with pytest.raises(DgError, match="digits"):
        eval(text, dict(w.consts), {"v0": huge, "v1": {"Add": 9 * huge, "Sub": -9 * huge, "Mul": huge}[op]})
    const = _expression(w, op, ["v0", "3"], (0, -1), [None, 3], None, "int", {0: "int"})
    assert eval(const, dict(w.consts), {"v0": 11}) == prim.impl(11, 3)
    # floats and ints beside floats keep their templates; bools go to the kernel
    assert _expression(w, op, ["v0", "v1"], (0, 1), [None, None], None, "float", {0: "float", 1: "int"}) \
        .startswith("(v0")
    assert not _expression(w, op, ["v0", "v1"], (0, 1), [None, None], None, "int", {0: "bool", 1: "int"}) \
        .startswith("((v0 ")


def test_a_jitted_int_past_dgs_limit_is_the_interpreters_limit_error():
    i = dsl.Interpreter()
    i.run("fn f(n, k) { let s = 0\n for j in range(k) { s = s + n * n }\n return s }\nlet jf = jit(f)")
    assert i.lookup("jf")(12345, 5) == 5 * 12345 ** 2
    with pytest.raises(DgError) as jitted:
        i.lookup("jf")(10 ** 2500, 5)
    with pytest.raises(DgError) as plain:
        i.lookup("f")(10 ** 2500, 5)
    assert str(jitted.value).splitlines()[0] == str(plain.value).splitlines()[0]
