"""A staged program as straight-line Python over numpy arrays and floats.

Each step becomes one line: an operator or a numpy call where the primitive's
`emit` template fits the kinds of values the step saw when it was staged (a
Python float in and out: Python arithmetic; a tensor: numpy), else a call to the
primitive's kernel with its options bound. A guard becomes a test that raises
`GuardFailed(step)`; an effect, a call that performs it again. Tensors are
dropped (`del`) after their last use, so memory is released as the interpreter
would release it.

`compile_program(program)` returns `run(inputs) -> output leaves`, compiled by
Python once. The array namespace is one name in the generated code (`np`), so
the same program could be written against another numpy-like library.
"""

import functools
import itertools
import re

import numpy as np

from ..base.cycles import gc_paused
from ..core import stage as S
from ..core.ops import elision
from ..core.ops.finite import finite
from ..core.primitives.registry import PRIMS
from ..core.stage import GuardFailed, is_array_kind, kind_of, same
from ..core.tape import REFCOUNTS_EXACT
from ..errors import DgError
from . import kernels
from .backoff import Backoff
from .in_place import WRITES, carried_write, fused_add, inner_adds, owned, owned_writes, put, rows_in_place
from .optimize import plan, resolve

_names = itertools.count()
_KERNEL = re.compile(r"\bK\.(\w+)\(")     # a call of a kernels.py function in a template
NUMBER_KINDS = ("float", "int", "bool")


def template_for(prim, arg_kinds, out_kind):
    """The primitive's emit template that fits these kinds, or None (then its kernel is called).

    `emit` is a template for Python numbers and tensors alike, or a dict with a "float"
    template (Python numbers in, a float or bool out), an "array" one (float tensors in,
    a tensor out, or a float from a full reduction, which is converted) and a "from_float"
    one (Python numbers in, a tensor out); "bools": true lets bool tensors into the array
    template, "ints": true lets ints in beside tensors. An "array" entry may be a function of
    the arguments' kinds giving the template (MatMul's: a batch of outer products by its kernel),
    and so may a "float" one (Where's: a number of the kind numpy's where gives). A "tuple" one
    takes a tuple first (a read of what a loop's kernel gave)."""
    emit = prim.emit
    if emit is None:
        return None
    if type(emit) is str:
        emit = {"float": emit, "array": emit}
    if arg_kinds and arg_kinds[0] == "tuple":
        return emit.get("tuple")
    numbers = all(k in NUMBER_KINDS for k in arg_kinds)
    if numbers and out_kind in ("float", "bool"):
        template = emit.get("float")
        template = template(arg_kinds) if callable(template) else template
        if template is not None and out_kind == "float" and "float" not in arg_kinds:
            template = f"float({template})"     # Python's abs(True) is the int 1, the kernel's 1.0
        return template
    if numbers and is_array_kind(out_kind):
        template = emit.get("from_float")
        return template(arg_kinds) if callable(template) else template
    arrays = [k for k in arg_kinds if is_array_kind(k)]
    scalars = ("float", "bool", "int") if _takes_ints(prim) else ("float", "bool")
    if not arrays or not all(is_array_kind(k) or k in scalars for k in arg_kinds):
        return None
    if not emit.get("bools") and any(k[2] != "f" for k in arrays) and not _mask_beside_floats(arg_kinds, out_kind):
        return None
    template = emit.get("array")
    if callable(template):
        template = template(arg_kinds)
    if template is None:
        return None
    if is_array_kind(out_kind):
        return template
    if out_kind == "float":
        return f"float({template})"
    if out_kind == "bool":
        return f"bool({template})"
    return None


def _mask_beside_floats(arg_kinds, out_kind):
    """Whether bool tensors meet float tensors or floats for a float tensor result (a mask times a
    cotangent), which numpy computes as dg does."""
    if not (is_array_kind(out_kind) and out_kind[2] == "f"):
        return False
    arrays = [k for k in arg_kinds if is_array_kind(k)]
    return all(k[2] in "fb" for k in arrays) and ("float" in arg_kinds or any(k[2] == "f" for k in arrays))


class Inexact(Exception):
    """A result the generated code checks (see optimize.py) is not finite: run the exact program."""


class _Writer:
    """The generated function's text and the constants it refers to."""

    def __init__(self):
        self.lines = []
        self.consts = {"np": np, "K": kernels, "_GF": GuardFailed, "_same": same, "_Inexact": Inexact,
                       "_finite": finite}
        self.in_place = {}      # id of a step writing into a carried tensor -> its slot (rows_in_place)
        self.copied = set()     # ids of Row and Index steps written as a copy: their tensor is written into next
        self.added = {}         # id of an Add step written as x[i] += g -> the RowAdd or IndexAdd step of g
        self.fused = {}         # id of an Add step -> the IndexAdd/RowAdd step it may add into its operand
        self.inner = {}         # id of a RowAdd step of those -> the IndexAdd step that makes its row

    def names(self, step):
        """The generated code's names of a step's arguments: its slots, or its constants."""
        return [f"v{r}" if r >= 0 else self.const(c) for r, c in zip(step[2], step[3])]

    def const(self, value):
        """A name in the generated code for a constant value."""
        if value is None or value is True or value is False:
            return repr(value)
        if type(value) is float and value == value and value not in (float("inf"), float("-inf")):
            return repr(value)
        if type(value) is int and abs(value) < 2 ** 62:
            return repr(value)
        name = f"c{next(_names)}"
        self.consts[name] = value
        return name

    def kernel(self, name, raising):
        """The generated code's name for kernels.<name>: Python's own function where it only
        differs by raising (kernels.RAISING) and the program has no effects to repeat."""
        fn = kernels.RAISING.get(name) if raising else None
        self.consts[f"K_{name}"] = fn or getattr(kernels, name)
        return f"K_{name}("


def compile_program(program, name="jitted", exact=False):
    """See `_compile` (with the cycle collector held: the work makes many objects without cycles)."""
    with gc_paused():
        return _compile(program, name, exact)


def _compile(program, name, exact):
    """The program as a compiled Python function run(inputs) -> tuple of output leaves.

    The function has `inexact` set when optimize.py dropped Nz steps or masks: then a failed guard
    may be one that the exact program passes, and its results are checked (`Inexact`); with
    `exact`, nothing is dropped (what run_code runs where the other code cannot vouch for its
    results). `exact` on the function: its exact twin, itself where nothing was dropped."""
    w = _Writer()
    p, w.fused, w.copied = owned_writes(program, plan(program, exact))
    p, w.inner = inner_adds(program, p, w.fused.values())
    lines, outs = _lines(w, program, p, True)
    if program.inputs:
        lines.insert(0, f"{_tuple(f'v{s}' for s in program.inputs)} = _in")
    lines.append(f"return {_tuple(outs)}")
    fn = _define(w, name, "_in", lines, p)
    fn.exact = None if p.inexact else fn
    fn.backoff = Backoff(EXACT_AFTER, EXACT_FOR)
    return fn


def outputs_checked(program, planned):
    """Whether every value the code generated from this plan checks is one of the program's
    outputs (then a caller that checks the outputs may run it without checks)."""
    # (a check other checks imply holds within one run only: a NaN made on one iteration may not
    # reach the loop's final results)
    return not planned.implied and set(planned.checked) <= {resolve(planned.alias, r) for r in program.out_refs
                                                             if r >= 0}


def compile_unchecked(program, seq, carried, name, kept=False, extra=False):
    """compile_loop(..., checks=False) where `outputs_checked` allows it (the caller then checks
    the loop's results instead), else None."""
    planned = plan(program)         # one plan for the question and the compilation
    if not outputs_checked(program, planned):
        return None
    return compile_loop(program, seq, carried, name, kept, extra, checks=False, planned=planned)


def compile_loop(program, seq, carried, name, kept=False, extra=False, checks=True, planned=None):
    """The program run as a loop body, the whole loop as one compiled Python function (no call
    and no lists per iteration): loop(entries, carry, fixed, kept, extra) -> (iterations
    completed, the carry after them, None or the exception that stopped the next one).

    The program's inputs are: what each of `entries` gives (itself where `seq` is None, a
    tuple of `seq` values where it is an int, or where it is a tuple of group sizes, a tuple of
    groups, each a value (None) or a sequence of that many: a zip of sequences), then `carried`
    ones (`carry`, then each iteration's first outputs), then the fixed ones (`fixed`). With `kept`, the carry each completed iteration started from
    is appended to the list `kept`; with `extra`, the tuple of the outputs after the carried
    ones to the list `extra`. An iteration that raises (a guard, a result the code cannot vouch
    for: see run_code) stops the loop with the carry it started from, for the caller to run
    that iteration as run_code does and go on. With checks=False, the results are not checked
    (see optimize.py): the caller checks the final carry instead, which it may only do where
    `outputs_checked` says that every checked value is an output. `planned`: optimize.plan(program)."""
    with gc_paused():
        return _compile_loop(program, seq, carried, name, kept, extra, checks, planned)


def _compile_loop(program, seq, carried, name, kept, extra, checks, planned):
    """See compile_loop."""
    w = _Writer()
    w.consts["_STOPS"] = (GuardFailed, Inexact, *kernels.RAISED)
    p = planned or plan(program)
    groups = (None,) if seq is None else (seq,) if type(seq) is int else seq
    given = sum(1 if g is None else g for g in groups)
    if not kept:
        p, w.in_place, w.copied, w.added = rows_in_place(program, p, program.inputs[given:given + carried], extra)
    p, w.fused, copied = owned_writes(program, p, w.in_place)
    w.copied |= copied
    p, w.inner = inner_adds(program, p, (*w.added.values(), *w.fused.values()))
    lines, outs = _lines(w, program, p, checks)
    ins = [f"v{s}" for s in program.inputs]
    entry, carry, fixed = ins[:given], ins[given:given + carried], ins[given + carried:]
    owned = sorted(set(w.in_place.values()))
    loop = [f"for {_target(entry, groups)} in _entries:"] + ["    _undo = {}"] * bool(owned) + ["    " + x for x in lines]
    if kept:
        loop.append(f"    _kept.append({_tuple(carry)})")
    if extra:
        loop.append(f"    _extra.append({_tuple(outs[carried:])})")
    moved = [(c, o) for c, o in zip(carry, outs[:carried]) if c != o]     # a leaf the body keeps stays
    if moved:
        loop.append(f"    {_tuple(c for c, _ in moved)} = {_tuple(o for _, o in moved)}")
    # a loop that appends to a list each iteration counts them by the list's length (a counter
    # cost a tenth of a small body's time)
    counted = "_kept" if kept else "_extra" if extra else None
    if counted:
        start, done = f"_k = len({counted})", f"len({counted}) - _k"
    else:
        start, done = "_k = 0", "_k"
        loop.append("    _k += 1")
    lines = [f"{_tuple(carry)} = _carry", f"{_tuple(fixed)} = _fixed", start, "try:"]
    # a tensor the loop writes rows of in place is its own (a copy made once), and an iteration
    # that stops partway puts back the rows it wrote: the caller runs it again from its start
    lines[1:1] = [f"v{r} = v{r}.copy()" for r in owned] + ["_undo = {}"] * bool(owned)
    lines += ["    " + x for x in loop]
    lines += ["except _STOPS as _e:"] + ["    for (_s, _i), (_a, _o) in reversed(_undo.items()): _a[_i] = _o"] * bool(owned)
    lines += [f"    return {done}, {_tuple(carry)}, _e", f"return {done}, {_tuple(carry)}, None"]
    return _define(w, name, "_entries, _carry, _fixed, _kept, _extra", lines, p)


def _target(names, groups):
    """The for loop's target taking `names` in groups (see compile_loop's `seq`)."""
    if groups == (None,):
        return names[0]
    if len(groups) == 1:
        return _tuple(names)
    it = iter(names)
    return _tuple(next(it) if g is None else _tuple(next(it) for _ in range(g)) for g in groups)


def _tuple(names):
    """A tuple display of names (a target or a value), for any number of them."""
    return "(" + "".join(n + ", " for n in names) + ")"


def _lines(w, program, p, checks):
    """The lines computing a program's steps (its inputs already in their slots), and the
    expressions of its outputs."""
    kinds = program.kinds
    out_refs = tuple(resolve(p.alias, r) if r >= 0 else r for r in program.out_refs)
    # a value checked at the end (a mask's factor that reaches no result) lives as long as an output
    last = _last_uses(p.steps, out_refs + (tuple(p.checked) if checks else ()))
    inputs = set(program.inputs)
    # steps an Add computes in its own place (in_place.py): never assigned; their dead values are
    # dropped after the Add
    computed_in_place = (*w.added.values(), *w.fused.values(), *w.inner.values())
    absorbed, never = {id(s) for s in computed_in_place}, {s[6] for s in computed_in_place}
    body, pending = [], []
    for i, step in _numbered(program.steps, p.steps):
        kind, op, refs, consts, kw, span, out = step
        args = w.names(step)
        # tensors read for the last time (not the caller's): dropped after the step, or written into
        dead = [r for r in set(refs) if r >= 0 and last.get(r, -1) == id(step) and r not in inputs
                and is_array_kind(kinds[r])]
        if id(step) in absorbed:
            pending += dead
            continue
        dead, pending = sorted({r for r in dead + pending if r not in never}), []
        if id(step) in w.in_place:      # x[i] = v or x[i] += g into the loop's own tensor (rows_in_place)
            body += carried_write(w, step, args, kinds)
        elif id(step) in w.copied:      # a row of a tensor written in place next
            body.append(f"v{out} = ({_expression(w, op, args, refs, consts, kw, kinds[out], kinds)}).copy()")
        elif kind == "guard":
            body.append(_guard(w, i, refs[0], args[0], consts[0], kinds))
        elif kind == "effect":
            fn = w.const(functools.partial(S._effect_kernel, **kw))
            body.append(f"v{out} = {fn}({', '.join(args)})")
        elif id(step) in w.fused:
            body.append(f"v{out} = {fused_add(w, step, dead, kinds, _expression)}")
        else:
            expression = _expression(w, op, args, refs, consts, kw, kinds[out], kinds)
            if op in WRITES and refs[0] in dead and kinds[refs[0]] == kinds[out]:
                expression = f"{put(step, args, w)} if {owned(args[0], w)} else {expression}"
            body.append(f"v{out} = {_into_dead(w, op, refs, args, expression, dead, kinds, kinds[out])}")
        if dead:
            body.append("del " + ", ".join(f"v{r}" for r in dead))
    if checks:
        # floats together, by arithmetic: their sum times 0.0 is 0.0 where each is finite, else NaN
        # (a sum that overflows only runs the exact code: it gives the same results); a call of
        # finite() per value had cost a loop under two reverse levels half its time
        floats = [r for r in p.checked if kinds[r] == "float"]
        if floats:
            body.append(f"if ({' + '.join(f'v{r}' for r in floats)}) * 0.0 != 0.0: raise _Inexact()")
        body.extend(f"if not _finite(v{r}): raise _Inexact()" for r in p.checked if kinds[r] != "float")
    outs = [w.const(p.known[r]) if r in p.known else f"v{r}" if r >= 0 else w.const(c)
            for r, c in zip(out_refs, program.out_consts)]
    return body, outs


def _define(w, name, params, lines, p):
    """Compile `def name(params): lines` with the writer's constants; the function, marked with its
    source, whether it may raise where dg's kernels would not (`raising`) and `inexact` (above)."""
    source = f"def {name}({params}):\n" + "".join(f"    {line}\n" for line in lines)
    raising = not any(step[0] == "effect" for step in p.steps)
    source = _KERNEL.sub(lambda m: w.kernel(m.group(1), raising), source)
    namespace = dict(w.consts)
    exec(compile(source, f"<jit {name}>", "exec"), namespace)
    fn = namespace[name]
    fn.source = source
    fn.inexact = p.inexact
    fn.raising = raising
    return fn


EXACT_AFTER = 3      # calls in a row the exact code had to give the results: it then runs first,
EXACT_FOR = 16       # for this many calls, before the other code is tried again


def run_code(program, code, values, rewind=None):
    """The output leaves of a program's compiled code on these inputs, or of its exact code where
    the compiled code cannot vouch for its own (optimize.py: a NaN where a zero rule was left out,
    or a guard that noticed one), or of the exact program, interpreted, where a math function
    raised where dg's kernel returns inf or nan.

    Where the exact code had to run on several calls in a row (results the program itself makes
    NaN or infinite, which the check cannot tell from a left-out zero rule's), it runs first
    for a while: one run per call instead of two.

    `rewind()` undoes the effects the compiled code performed before the exact code performs
    them again (the random generator put back, the output dropped): a program with effects needs it."""
    backoff = code.backoff
    if backoff.skipping():
        return _exact(program, code.exact, values)
    try:
        out = code(values)
        backoff.hit()
        return out
    except Inexact:
        pass
    except kernels.RAISED:
        if not code.raising:
            raise
        if rewind is not None:
            rewind()
        return S.output_leaves(program, values)
    except DgError as exc:
        if exc.span is not None:
            raise
        # a kernel's error (7 // 0) inside compiled code, which knows no lines: the replay
        # meets it again at its step, and says which line it is
        if rewind is not None:
            rewind()
        return S.output_leaves(program, values)
    except GuardFailed:
        if not code.inexact:
            raise
    if rewind is not None:
        rewind()
    if code.exact is None:
        code.exact = compile_program(program, "exact", exact=True)
    backoff.miss()
    return _exact(program, code.exact, values)


def _exact(program, exact, values):
    """The exact code's results, or the exact program's where a math function raised."""
    try:
        return exact(values)
    except kernels.RAISED:
        if not exact.raising:
            raise
    return S.output_leaves(program, values)


def _numbered(original, steps):
    """The steps with their index in the original program (which guard failures report)."""
    index = {id(s): i for i, s in enumerate(original)}
    position = {(s[6], s[0], s[1]): i for i, s in enumerate(original)}
    for s in steps:
        yield index.get(id(s), position.get((s[6], s[0], s[1]), -1)), s


def _guard(w, i, ref, arg, expected, kinds):
    """The line that checks a guard."""
    if type(expected) is bool and ref >= 0 and kinds[ref] == "bool":
        return f"if {arg} is not {expected}: raise _GF({i})"
    return f"if not _same({arg}, {w.const(expected)}): raise _GF({i})"


def _takes_ints(prim):
    """Whether the primitive's array template takes ints beside tensors (an index: `x[i]`)."""
    return type(prim.emit) is dict and bool(prim.emit.get("ints"))


# operators whose array template may write its result into a dead operand's memory (_into_dead)
INTO = {"Add": "np.add", "Sub": "np.subtract", "Mul": "np.multiply", "ScalarMul": "np.multiply",
        "Div": "np.true_divide"}


def _into_dead(w, op, refs, args, expression, dead, kinds, out_kind):
    """`expression`, or, for a large float tensor (elision.MIN_SIZE: below it a fresh array costs
    less than the check) from + - * / where an operand of the result's
    shape is read for the last time, the operation written into that operand's memory when it is
    the operand's own (no view of it, no other name or list holding it: `sys.getrefcount` counts
    the local and the call's argument), as numpy does for temporaries of an expression and the
    interpreter for `x @ w + b` (core/ops/elision.py). A fresh array this large is also fresh memory
    from the system: the write into it cost twice the arithmetic (GradBench's kmeans)."""
    ufunc = INTO.get(op)
    if ufunc is None or not REFCOUNTS_EXACT or not expression.startswith("(") or not is_array_kind(out_kind) \
            or out_kind[2] != "f" or int(np.prod(out_kind[3])) < elision.MIN_SIZE:
        return expression
    for r, a in zip(refs, args):
        if r in dead and kinds[r] == out_kind:
            return f"({ufunc}({', '.join(args)}, out={a}) if {owned(a, w)} else {expression})"
    return expression


def _expression(w, op, args, refs, consts, kw, out_kind, kinds):
    """The right-hand side computing one primitive."""
    prim = PRIMS[op]
    arg_kinds = [kinds[r] if r >= 0 else kind_of(c) for r, c in zip(refs, consts)]
    template_args = args
    if any(is_array_kind(k) for k in arg_kinds) and not _takes_ints(prim):
        # a small int constant beside a tensor is, to numpy, the float it equals (x ** 2, x * 3),
        # but not where the template takes ints (an index), nor to a kernel (a loop's counter)
        template_args = list(args)
        for i, (r, c) in enumerate(zip(refs, consts)):
            if r < 0 and type(c) is int and abs(c) < 2 ** 53:
                arg_kinds[i], template_args[i] = "float", repr(float(c))
    template = template_for(prim, arg_kinds, out_kind)
    if template is not None:
        names = {k: w.const(v) for k, v in (kw or {}).items()}
        return template.format(*template_args, **names)
    impl = prim.plain or prim.impl
    fn = w.const(functools.partial(impl, **kw) if kw else impl)
    call = f"{fn}({', '.join(args)})"
    return _small_ints(op, args, refs, consts, arg_kinds, out_kind, call) or call


# int + - * whose operands are below these bounds cannot make an int past dg's limit on an int's
# length (core/ops/arith.py): Python's operator, where the kernel checks the result's length
INT_OPERATORS = {"Add": ("+", 2 ** 62), "Sub": ("-", 2 ** 62), "Mul": ("*", 2 ** 31)}


def _small_ints(op, args, refs, consts, arg_kinds, out_kind, call):
    """For int + - * (a loop's `i - 1`, `2 * k + 1`): Python's operator where the operands are
    small enough that the result is within dg's limit, else the kernel's `call`; None for
    anything else."""
    if op not in INT_OPERATORS or out_kind != "int" or any(k != "int" for k in arg_kinds) \
            or any(r < 0 and not abs(c) < INT_OPERATORS[op][1] for r, c in zip(refs, consts)):
        return None
    symbol, bound = INT_OPERATORS[op]
    tests = " and ".join(f"-{bound} < {a} < {bound}" for a, r in zip(args, refs) if r >= 0)
    plain = f"({args[0]} {symbol} {args[1]})"
    return f"({plain} if {tests} else {call})" if tests else plain


def _last_uses(steps, out_refs):
    """Slot -> the original index of the last step that reads it (outputs: read after every step)."""
    last = {}
    for step in steps:
        for r in step[2]:
            if r >= 0:
                last[r] = id(step)
    for r in out_refs:
        if r >= 0:
            last[r] = None
    return last


__all__ = ["compile_program", "compile_loop", "compile_unchecked", "outputs_checked", "template_for", "run_code"]
