"""Each primitive's `emit` templates (the one-line code jit generates for it) compute what its
kernel computes, on numbers (zeros of both signs, infinities, NaN, bools) and on tensors."""

import itertools
import math
import re
import string

import numpy as np
import pytest

from dsl.jit.codegen import _Writer     # the generated code's namespace
from dsl.primitives.registry import PRIMS

NUMBERS = [0.0, -0.0, 1.5, -2.0, 3.0, math.inf, -math.inf, math.nan, True, False]


def _templates(flavour):
    """(name, template, arity) for every primitive whose `flavour` template has only positional slots."""
    out = []
    for name, prim in sorted(PRIMS.items()):
        emit = prim.emit
        if emit is None:
            continue
        template = emit if type(emit) is str else emit.get(flavour)
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


def _run(template, args):
    """The template's value on `args`, as the generated code would compute it."""
    names = [f"a{i}" for i in range(len(args))]
    return eval(template.format(*names), dict(_Writer().consts), dict(zip(names, args)))


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
            got = _run(template, args)
        except (ZeroDivisionError, OverflowError, ValueError) as e:
            pytest.fail(f"{name}{args}: the template {template!r} raised {e!r}, the kernel gave {want!r}")
        assert _same(got, want), f"{name}{args}: template {template!r} gives {got!r}, the kernel {want!r}"
        checked += 1
    assert checked > 0 or name == "MatMul"      # numbers have no matrix product


def _arrays(arity, bools):
    """Argument tuples of tensors (and numbers beside them) with infinities, NaN and zeros."""
    rng = np.random.default_rng(0)
    x = np.array([0.0, -0.0, 1.5, -2.0, np.inf, -np.inf, np.nan, 0.25])
    ys = [rng.permutation(x) for _ in range(arity)]
    cases = [tuple(ys)]
    if bools:
        cases.append(tuple(y > 0 for y in ys))
        cases.append((ys[0] > 0,) + tuple(ys[1:]))
    cases.append((ys[0],) + tuple(2.0 for _ in ys[1:]))
    return cases


@pytest.mark.parametrize("name,template,arity", _templates("array"), ids=lambda v: v if type(v) is str else "")
def test_array_templates_agree_with_kernels(name, template, arity):
    prim = PRIMS[name]
    emit = prim.emit
    bools = type(emit) is dict and emit.get("bools")
    checked = 0
    for args in _arrays(arity, bools):
        if name == "MatMul":
            args = tuple(np.nan_to_num(a).reshape(2, 4) if i == 0 else np.nan_to_num(a).reshape(4, 2)
                         for i, a in enumerate(args) if type(a) is np.ndarray) or args
            if len(args) < 2:
                continue
        want = _kernel(prim, args)
        if type(want) is not np.ndarray:
            continue        # numbers only where a tensor is reduced, and then template_for wraps it
        with np.errstate(all="ignore"):
            got = _run(template, args)
        assert _same(got, want), f"{name}: template {template!r} gives {got!r}, the kernel {want!r}"
        checked += 1
    assert checked > 0
