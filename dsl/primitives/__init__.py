"""Every primitive of dg, declared once with its rules (see registry.py for the recipe).

Importing this package fills the registry and the tables the transformations
read: the kernels `record` calls (tape.IMPLS) and the uniform reverse and
forward rules (tape.PULLBACKS, tape.PUSHFORWARDS), the float fast path of elementwise
primitives (tape.FLOAT_PULLBACKS) and the plain-array fast path (tape.PLAIN_PULLBACKS).
"""

from ..autodiff import tape
from . import arith, compare, control, elementwise, linalg, loops, nn, order, reduce, shape, structs  # noqa: F401
from .mechanism import float_pullback, has_plain_step, plain_pullback, pullback, pushforward
from .namespaces import EAGER, TRACED
from .registry import PRIMS


def _built_on_first_call(table, name, make, prim):
    """An entry of `table` that builds make(prim) when first called and puts it in its own place."""
    built = []

    def build_and_call(*args):
        if not built:
            built.append(make(prim))
            table[name] = built[0]
        return built[0](*args)
    return build_and_call


def _fill_tables():
    """Copy each primitive's kernel and uniform rules into the tables the tape reads."""
    tape.EAGER, tape.TRACED = EAGER, TRACED
    for name, prim in PRIMS.items():
        tape.IMPLS[name] = prim.impl
        if not prim.differentiable and not prim.effect:
            tape.PLAIN.add(name)
        if prim.user_code:
            tape.USER_CODE.add(name)
        if prim.guards:
            tape.GUARDED.add(name)
        if prim.partials is not None:      # generated code: built when first called (start-up time)
            tape.PULLBACKS[name] = _built_on_first_call(tape.PULLBACKS, name, pullback, prim)
            tape.FLOAT_PULLBACKS[name] = _built_on_first_call(tape.FLOAT_PULLBACKS, name, float_pullback, prim)
        else:
            rule = pullback(prim)
            if rule is not None:
                tape.PULLBACKS[name] = rule
        if has_plain_step(prim):
            tape.PLAIN_PULLBACKS[name] = _built_on_first_call(tape.PLAIN_PULLBACKS, name, plain_pullback, prim)
        rule = pushforward(prim)
        if rule is not None:
            tape.PUSHFORWARDS[name] = rule


_fill_tables()
