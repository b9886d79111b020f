"""The primitive registry: every operation a transformation can see, declared once.

A `Primitive` is what each interpreter over primitives needs to know of one
operation (JAX's design, jax/_src/lax/lax.py):

- `impl(*args, **kw)`: the forward kernel. It is called with the arguments
  unboxed at the level being recorded; they may still be boxes of outer levels,
  on which the kernel records again (that is how transformations nest).
- `vjp` (reverse mode, `grad`): one rule per argument, `rule(ns, g, ans, *args, **kw)`,
  or with `vjp_all`, one rule `rule(ns, g, ans, args, kw, wanted)` returning a
  cotangent or None per argument.
- `jvp` (forward mode, `jvp`): `rule(ns, tangents, ans, args, kw)`, tangents holding
  None for arguments without one; it returns the output's tangent (None for zero).
- `batch` (`vmap`): `rule(ns, args, batched, kw)`; a batched argument carries the
  batch on axis 0, and so must the result (or say it has none: batching.Unbatched, or
  per element of a tuple: batching.Lanes).
- `emit` (`jit`): how generated code computes it, else generated code calls `plain`
  where the primitive has one (`impl` on plain values, without looking for boxes: none
  reach compiled code), else `impl`.

Rules are written against a namespace `ns` of array operations: on plain numbers
and arrays it is numpy itself (dsl/primitives/namespaces.py, `EAGER`), and where a
value is boxed it is dg's own primitives (`TRACED`), so the rule's own work is
recorded on the outer trace: that is what makes every transformation compose.

Elementwise primitives declare only their `partials` (the local derivative with
respect to each argument, `d(ns, ans, *args)`); the VJP, JVP and batching rules
follow from them (dsl/primitives/mechanism.py), and so does reference 6.7: a zero
cotangent or tangent times an infinite local derivative is 0, in one place.

Facts other code relies on are derived here, never kept by hand: `reads_output`
(a rule reads the primitive's own result: its memory may not be reused, see
dsl/ops/elision.py) and `linear` (its rules read only operands' shapes). Two are
declared, since code cannot show them: `user_code`, a reverse rule that runs the
user's code (custom_vjp, checkpoint, host functions, staged loops), whose effects a
second backward pass would repeat (tape.backward_from); and `guards`, a kernel that
checks a staged program's guards (a rolled loop's body), which decides whether a
recording applies even where nothing reads its result (stage.program_of keeps it).

A rule that is missing is a `grad` error naming the primitive and the
transformation, never a silent wrong answer (`rule_of`).

Adding a primitive: (1) its forward kernel in dsl/ops/, which calls
`tape.record(NAME, args, kw)` when an argument is boxed; (2) its entry, with
`define(NAME, ...)` in the family module of dsl/primitives/; (3) its tests:
tests/test_primitive_rules.py checks every registered rule against finite
differences (vjp), against the vjp (jvp) and against a loop (batch), and fails
for a primitive it has no inputs for. See docs/architecture.md.
"""

import dis

from ..errors import error

PRIMS = {}      # name -> Primitive; filled by the family modules when dsl.primitives is imported

TRANSFORMS = {"vjp": "reverse mode (grad)", "jvp": "forward mode (jvp)", "batch": "vmap"}


class Primitive:
    """One operation and its rules (see the module docstring)."""

    __slots__ = ("name", "impl", "vjp", "vjp_all", "jvp", "batch", "emit", "partials", "piecewise",
                 "differentiable", "_reads_output", "linear", "effect", "user_code", "guards", "plain")

    def __init__(self, name, impl, vjp=None, vjp_all=None, jvp=None, batch=None, emit=None, partials=None,
                 piecewise=False, differentiable=True, linear=False, effect=False, user_code=False,
                 guards=False, plain=None):
        self.name = name
        self.impl = impl
        self.vjp = vjp
        self.vjp_all = vjp_all
        self.jvp = jvp
        self.batch = batch
        self.emit = emit
        self.partials = partials
        self.piecewise = piecewise      # partials are piecewise constant (masks, signs, tie shares)
        self.differentiable = differentiable
        self.linear = linear
        self.effect = effect
        self.user_code = user_code      # its reverse rule runs the user's code (dg or Python, with effects)
        self.guards = guards            # its kernel checks guards: kept in a staged program even if unread
        self.plain = plain              # its kernel on plain values, for generated code (see `emit`)
        self._reads_output = None

    @property
    def reads_output(self):
        """Whether a reverse-mode rule reads the primitive's own result (found in the rules' code
        when first asked: reading every rule's bytecode at import cost 5 ms of dg's start-up)."""
        if self._reads_output is None:
            self._reads_output = any(_reads_param(r, "ans") for r in self._rules())
        return self._reads_output

    def _rules(self):
        """Every reverse-mode rule function (to derive facts from)."""
        rules = list(self.vjp or ()) + list(self.partials or ())
        if self.vjp_all is not None:
            rules.append(self.vjp_all)
        return [r for r in rules if callable(r)]     # a partial of ONE or MINUS_ONE reads nothing

    def __repr__(self):
        return f"<primitive {self.name}>"


def define(name, impl, **rules):
    """Register primitive `name` with its forward kernel and rules; return it."""
    if name in PRIMS:
        raise ValueError(f"the primitive {name} is defined twice")
    prim = Primitive(name, impl, **rules)
    PRIMS[name] = prim
    return prim


def rule_of(name, kind, span=None):
    """The `kind` rule ("vjp", "jvp" or "batch") of a primitive, or a loud `grad` error."""
    prim = PRIMS.get(name)
    rule = None if prim is None else getattr(prim, kind)
    if rule is None and kind == "vjp" and prim is not None:
        rule = prim.vjp_all
    if rule is None:
        raise error("grad", f"the operation {name} has no rule for {TRANSFORMS[kind]}", span,
                    hint=None if prim is not None and prim.differentiable else
                    f"{name} is not differentiable; use stop_gradient(...) on its inputs")
    return rule


def _reads_param(fn, name):
    """Whether `fn`'s code (or a function nested in it) loads its parameter `name`."""
    code = getattr(fn, "__code__", None)
    if code is None:
        return True     # a callable we cannot see into: assume the worst
    if name in code.co_cellvars:
        return True     # captured by a nested function, which reads it
    return any(ins.opname in ("LOAD_FAST", "LOAD_FAST_CHECK", "LOAD_FAST_LOAD_FAST") and
               name in (ins.argval if isinstance(ins.argval, tuple) else (ins.argval,))
               for ins in dis.get_instructions(code))


def reads_output(name):
    """Whether the reverse-mode rule of primitive `name` reads the primitive's own result."""
    prim = PRIMS.get(name)
    return True if prim is None else prim.reads_output


__all__ = ["PRIMS", "Primitive", "define", "rule_of", "reads_output"]
