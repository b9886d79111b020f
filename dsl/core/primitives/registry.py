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
and arrays it is numpy itself (dsl/core/primitives/namespaces.py, `EAGER`), and where a
value is boxed it is dg's own primitives (`TRACED`), so the rule's own work is
recorded on the outer trace: that is what makes every transformation compose.

Elementwise primitives declare only their `partials` (the local derivative with
respect to each argument, `d(ns, ans, *args)`); the VJP, JVP and batching rules
follow from them (dsl/core/primitives/mechanism.py), and so does reference 6.7: a zero
cotangent or tangent times an infinite local derivative is 0, in one place.

Facts other code relies on are fields of the definition, never lists kept elsewhere.
Derived: `reads_output` (a rule reads the primitive's own result: its memory may not
be reused, see dsl/core/ops/elision.py). Declared, since code cannot show them: `linear`
(its rules read only operands' shapes); `user_code`, a reverse rule that runs the
user's code (custom_vjp, checkpoint, host functions, staged loops), whose effects a
second backward pass would repeat (reverse_pass.backward_from); `guards`, a kernel that
checks a staged program's guards (a rolled loop's body), which decides whether a
recording applies even where nothing reads its result (stage.program_of keeps it);
`keeps_nan`, a NaN in any argument stays a NaN in the result (or is dropped whole, as
an index drops entries), so that jit may leave out the masks of reference 6.7 on the
way to a checked result (dsl/backends/optimize.py); `can_fail`, the kernel may raise an
error for some values (a class index out of range, an int division by zero, user or
host code), so that an `if` whose branches hold one is not run both ways
(dsl/transform/jit/both_ways.py); `indexed`, the kernel indexes by its second argument, which
may fall out of range when it is staged. `facts(name)` lists the names with one.

A rule that is missing is a `grad` error naming the primitive and the
transformation, never a silent wrong answer (`rule_of`).

Adding a primitive: (1) its forward kernel in dsl/core/ops/, which calls
`tape.record(NAME, args, kw)` when an argument is boxed; (2) its entry, with
`define(NAME, ...)` in the family module of dsl/core/primitives/; (3) its tests:
tests/autodiff/test_primitive_rules.py checks every registered rule against finite
differences (vjp), against the vjp (jvp) and against a loop (batch), and fails
for a primitive it has no inputs for. See docs/architecture.md.
"""

import ast
import functools
import inspect

from ...errors import error
from .. import tape
from . import batching, mechanism as M

PRIMS = {}      # name -> Primitive; filled by the family modules when dsl.core.primitives is imported

TRANSFORMS = {"vjp": "reverse mode (grad)", "jvp": "forward mode (jvp)", "batch": "vmap"}


class Primitive:
    """One operation and its rules (see the module docstring)."""

    __slots__ = ("name", "impl", "vjp", "vjp_all", "jvp", "batch", "emit", "partials", "piecewise",
                 "differentiable", "_reads_output", "linear", "effect", "user_code", "guards", "plain",
                 "keeps_nan", "can_fail", "indexed")

    def __init__(self, name, impl, vjp=None, vjp_all=None, jvp=None, batch=None, emit=None, partials=None,
                 piecewise=False, differentiable=True, linear=False, effect=False, user_code=False,
                 guards=False, plain=None, keeps_nan=False, can_fail=False, indexed=False):
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
        self.keeps_nan = keeps_nan      # a NaN argument makes a NaN result
        self.can_fail = can_fail        # the kernel may raise for some values
        self.indexed = indexed          # the kernel indexes by its second argument
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

    def bind(self, *args, **kw):
        """Apply the primitive: its kernel on plain values, recorded on the trace of the highest
        level among boxed arguments (whose kernel call, on values that may still be boxes of
        outer traces, binds again there: that is how transformations nest). One without
        derivatives runs on the values under reverse and forward boxes, recorded only where a
        trace stages every operation (tape.nondiff): a random key carried by a loop under grad
        is such a box, and a draw from it has no cotangent to pass back."""
        if self.name in tape.PLAIN:
            return tape.nondiff(self.name, args, kw or None)
        return tape.record(self.name, args, kw or None)

    def __repr__(self):
        return f"<primitive {self.name}>"


def define(name, impl, **rules):
    """Register primitive `name` with its forward kernel and rules, and put them where each
    transformation looks them up (`_install`); return it. A primitive may be defined at any
    time: every transformation sees it from then on."""
    if name in PRIMS:
        raise ValueError(f"the primitive {name} is defined twice")
    prim = Primitive(name, impl, **rules)
    PRIMS[name] = prim
    _install(prim)
    return prim


def remove(name):
    """Undo `define` (a primitive a test or an embedding program defined for a while)."""
    PRIMS.pop(name)
    for table in (tape.IMPLS, tape.PULLBACKS, tape.FLOAT_PULLBACKS, tape.PLAIN_PULLBACKS, tape.PUSHFORWARDS,
                  tape.BATCHES):
        table.pop(name, None)
    for names in (tape.PLAIN, tape.USER_CODE, tape.GUARDED):
        names.discard(name)


def _install(prim):
    """Copy a primitive's kernel and its rules, in the one form each transformation calls
    (mechanism.py), into the tables the tape, forward mode and vmap read."""
    name = prim.name
    tape.IMPLS[name] = prim.impl
    if not prim.differentiable and not prim.effect:
        tape.PLAIN.add(name)
    if prim.user_code:
        tape.USER_CODE.add(name)
    if prim.guards:
        tape.GUARDED.add(name)
    if prim.partials is not None:      # generated code: built when first called (start-up time)
        tape.PULLBACKS[name] = _built_on_first_call(tape.PULLBACKS, name, M.pullback, prim)
        tape.FLOAT_PULLBACKS[name] = _built_on_first_call(tape.FLOAT_PULLBACKS, name, M.float_pullback, prim)
    else:
        rule = M.pullback(prim)
        if rule is not None:
            tape.PULLBACKS[name] = rule
    if M.has_plain_step(prim):
        tape.PLAIN_PULLBACKS[name] = _built_on_first_call(tape.PLAIN_PULLBACKS, name, M.plain_pullback, prim)
    rule = M.pushforward(prim)
    if rule is not None:
        tape.PUSHFORWARDS[name] = rule
    rule = batching.elementwise(prim) if prim.batch == batching.ELEMENTWISE else prim.batch
    if rule is not None:
        tape.BATCHES[name] = rule


def _built_on_first_call(table, name, make, prim):
    """An entry of `table` that builds make(prim) when first called and puts it in its own place."""
    built = []

    def build_and_call(*args):
        if not built:
            built.append(make(prim))
            table[name] = built[0]
        return built[0](*args)
    return build_and_call


def facts(name):
    """The names of the primitives declared with the fact `name` ("keeps_nan", "can_fail", "indexed")."""
    return frozenset(n for n, p in PRIMS.items() if getattr(p, name))


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
    """Whether `fn` (or a function nested in it) reads its parameter `name`, found in its source's
    syntax tree (stable from one Python to the next, unlike bytecode). Where the source cannot
    be found or several functions on its line could be it, the answer errs towards true: a rule
    wrongly thought to read its output costs a copy, the reverse a wrong gradient."""
    code = getattr(fn, "__code__", None)
    if code is None:
        return True     # a callable we cannot see into: assume the worst
    if name not in code.co_varnames[:code.co_argcount + code.co_kwonlyargcount]:
        return False
    if name in code.co_cellvars:
        return True     # captured by a nested function, which reads it
    try:
        functions = _functions_in(inspect.getsourcefile(fn))
    except (OSError, TypeError, SyntaxError):
        return True
    params = tuple(code.co_varnames[:code.co_argcount])
    candidates = functions.get((code.co_firstlineno, params))
    return True if candidates is None else any(name in loaded for loaded in candidates)


@functools.lru_cache(maxsize=None)      # a pure function of a source file: the same for every interpreter
def _functions_in(path):
    """{(first line, parameter names): [names each function starting there loads]} of a source file."""
    with open(path, encoding="utf-8") as f:
        tree = ast.parse(f.read())
    out = {}
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.Lambda)):
            key = (_first_line(node), tuple(a.arg for a in node.args.args))
            out.setdefault(key, []).append(frozenset(n.id for n in ast.walk(node)
                                                     if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)))
    return out


def _first_line(node):
    """The line a function's code starts on: its first decorator's, else its own."""
    decorators = getattr(node, "decorator_list", None)
    return decorators[0].lineno if decorators else node.lineno


def reads_output(name):
    """Whether the reverse-mode rule of primitive `name` reads the primitive's own result."""
    prim = PRIMS.get(name)
    return True if prim is None else prim.reads_output


__all__ = ["PRIMS", "Primitive", "define", "remove", "facts", "rule_of", "reads_output"]
