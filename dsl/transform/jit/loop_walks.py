"""The walks of a loop rolled under two reverse levels (dsl/core/primitives/loop_twice.py) on plain
values: LoopBack keeping its cotangents, LoopBackT and LoopBackAdd, each with its body staged
once from an iteration's values and its loop compiled whole (codegen.compile_loop). An
iteration a compiled loop stops at (a guard of its body that went another way, a result the
code cannot vouch for) runs exactly, through the primitives, and the loop goes on after it.

The two walks that only need the forward values (LoopBack and LoopBackAdd) run the body's
split pullback B on the residuals the forward loop kept (dsl/transform/jit/split.py) where it kept them,
instead of computing each iteration's forward again; LoopBackT differentiates the pullback
with respect to the state, so it replays the iteration from its state.

Those two also run first without their NaN checks where a NaN made on any iteration reaches
the final carry (split.checks_can_wait), checking only that; anything not finite there runs
the checked loop, as the reverse loop of one level does (loop_body.Hoisted)."""

from ...backends.codegen import compile_loop, compile_unchecked
from ...core import stage as S
from ...core.ops.arith import add
from ...core.ops.finite import finite
from ...core.primitives.loop_iteration import pullback
from ...core.primitives.loop_twice import back_added, back_reversed
from ...core.primitives.loops import stage_pullback
from .split import checks_can_wait, on_residuals


class Walks:
    """A Body's three walks, each staged and compiled on its first run."""

    __slots__ = ("body", "n", "_loops")

    def __init__(self, body):
        self.body = body
        self.n = len(body.forward.inputs) - 1     # state leaves
        self._loops = {}        # name -> compiled loop, or False where its body does not stage

    def back(self, items, kept, cts):
        """LoopBack on plain values: (c_0..., c_{k+1} for each iteration k)."""
        body, count = self.body, len(items)
        if not count:
            return (*cts, [])
        split = self._split(kept)
        if split is not None:
            loop = self._loops.get("back_split")
            if loop is None:
                b, r = split
                loop = self._loop("back_split", lambda: compile_loop(b, r, len(cts), "loop_back_split", kept=True))
                self._loops["back_split_fast"] = (lambda: _fast(b, r, len(cts), "loop_back_split_fast", True), False)
            got = _unchecked(self._later("back_split_fast"), reversed(kept.residuals), count, cts, [])
            if got is not None:
                c0, got = got
                got.reverse()
                return (*c0, got)
            entries = reversed(kept.residuals)
        else:
            loop = self._loops.get("back")
            if loop is None:
                loop = self._loop("back", lambda: self._stage_back(items[-1], kept[-1], cts))
            entries = zip(reversed(items), reversed(kept))
        got = []
        c0 = _walk(loop, entries, count, cts,
                   lambda j, c: (pullback(body, items[-1 - j], list(kept[-1 - j]), c), ()), got, None)
        got.reverse()
        return (*c0, got)

    def back_reversed(self, items, kept, cthist, u):
        """LoopBackT on plain values: (u_N..., s̄_k for each iteration k)."""
        body = self.body
        if not len(items):
            return (*u, [])
        split = self._split(kept)
        loop = self._loops.get("back_reversed_split") if split is not None else False
        staged = loop is None       # the body is staged once for both loops on their first call
        if staged:
            program = self._reversed_program(items[0], kept[0], cthist[0], u)
            loop = self._loop("back_reversed_split", lambda: self._on_residuals(program, kept, u))
        if loop:
            entries = zip(kept.residuals, cthist)
        else:
            loop = self._loops.get("back_reversed")
            if loop is None:
                if not staged:
                    program = self._reversed_program(items[0], kept[0], cthist[0], u)
                loop = self._loop("back_reversed", lambda: program and compile_loop(
                    program, (None, self.n, len(u)), len(u), "loop_back_reversed", extra=True))
            entries = zip(items, kept, cthist)
        sbars = []
        uN = _walk(loop, entries, len(items), u,
                   lambda j, c: back_reversed(body, items[j], list(kept[j]), list(cthist[j]), c), None, sbars)
        return (*uN, sbars)

    def _reversed_program(self, item, state, cnext, u):
        """LoopBackT's body staged: the pullback of Q at (item, state, cnext) given u; None where
        it does not stage."""
        body, n, m = self.body, self.n, len(u)

        def both(a):
            unext, sbar = back_reversed(body, a[0], a[1:1 + n], a[1 + n:1 + n + m], a[1 + n + m:])
            return (*unext, *sbar)

        try:
            return _program(both, (item, *state, *cnext, *u))
        except S.GuardFailed:
            return None

    def _on_residuals(self, program, kept, u):
        """LoopBackT's loop (its body `program`, staged) reading the residuals the forward loop
        kept for the values of the forward it needs (sin(x) for sin's rule's rule), where it
        needs none other; else None."""
        forward = self.body._split[0].source
        program = program and on_residuals(forward, len(kept.residuals[0]), program)
        return program and compile_loop(program, (len(kept.residuals[0]), len(u)), len(u),
                                        "loop_back_reversed_split", extra=True)

    def back_added(self, items, kept, hbar, cts):
        """LoopBackAdd on plain values: c_0."""
        body, count = self.body, len(items)
        if not count:
            return list(cts)
        split = self._split(kept)
        if split is not None:
            loop = self._loops.get("back_added_split")
            if loop is None:
                loop = self._stage_added_split(split, kept, hbar, cts)
            done = _unchecked(self._later("back_added_split_fast"), zip(reversed(kept.residuals), reversed(hbar)),
                              count, cts, None)
            if done is not None:
                return done[0]
            entries = zip(reversed(kept.residuals), reversed(hbar))
        else:
            loop = self._loops.get("back_added")
            if loop is None:
                n, m = self.n, len(cts)
                loop = self._staged("back_added", lambda a: back_added(body, a[0], a[1:1 + n], a[1 + n:1 + n + m],
                                                                       a[1 + n + m:]),
                                    (items[-1], *kept[-1], *hbar[-1], *cts), (None, n, m), m)
            entries = zip(reversed(items), reversed(kept), reversed(hbar))
        return _walk(loop, entries, count, cts,
                     lambda j, c: (back_added(body, items[-1 - j], list(kept[-1 - j]), list(hbar[-1 - j]), c), ()),
                     None, None)

    def _stage_back(self, item, state, cts):
        """LoopBack's loop through the body's pullback Q (where its pullback does not split)."""
        q = stage_pullback(self.body, item, list(state), cts)
        return q and compile_loop(q, (None, self.n), len(cts), "loop_back", kept=True)

    def _stage_added_split(self, split, kept, hbar, cts):
        """LoopBackAdd's loop through the split pullback B on the residuals."""
        b, r = split
        m = len(cts)

        def added(a):
            return [add(c, h) for c, h in zip(S.output_leaves(b, [*a[:r], *a[r + m:]]), a[r:r + m])]

        return self._staged("back_added_split", added, (*kept.residuals[-1], *hbar[-1], *cts), (r, m), m)

    def _split(self, kept):
        """(B, how many residuals) where the forward loop kept each iteration's residuals for the
        body's split pullback B, else None."""
        split = self.body._split
        residuals = getattr(kept, "residuals", None)
        if split and residuals and len(residuals) == len(kept):
            return split[1], len(residuals[0])
        return None

    def _staged(self, name, fn, example, groups, carried, kept=False, extra=False):
        """The walk's loop compiled, its body `fn` (a list of inputs -> outputs) staged on `example`
        (and, without `extra`, under name + "_fast" the same loop without checks where it may go
        without them: `_fast`)."""
        def make():
            program = _program(fn, example)
            if not extra:
                self._loops[name + "_fast"] = (lambda: _fast(program, groups, carried, f"loop_{name}_fast", kept), False)
            return compile_loop(program, groups, carried, f"loop_{name}", kept, extra)
        return self._loop(name, make)

    def _later(self, name):
        """The loop without checks `name` (see `_fast`), compiled on the walk's second run: a first
        call compiles only the checked loops (each compilation costs a first call more than the
        checks cost a later one); None until then or where there is none."""
        found = self._loops.get(name)
        if type(found) is tuple:        # (make, whether the walk ran once already)
            make, ran = found
            if not ran:
                self._loops[name] = (make, True)
                return None
            found = self._loops[name] = make()
        return found or None

    def _loop(self, name, make):
        """The compiled loop `make()` gives (None where its body does not stage), made once; False
        where its body does not stage."""
        found = self._loops.get(name)
        if found is None:
            try:
                found = make() or False
            except S.GuardFailed:
                found = False
            self._loops[name] = found
        return found


def _program(fn, example):
    """`fn` (a list of inputs -> outputs) staged on the values `example`."""
    trace = S.StageTrace()
    args = [trace.box(v, "Arg", (), (), None, None) for v in example]
    return S.program_of(trace, args, tuple(fn(args)))


def _fast(program, groups, carried, name, kept):
    """The loop over `program` compiled without its NaN checks, where a NaN made on any iteration
    reaches the final carry (split.checks_can_wait) and every value checked is an output, so that
    the caller may check the final carry alone; else False. (A loop with extra outputs has none:
    they do not reach the carry.)"""
    if not checks_can_wait(program):
        return False
    return compile_unchecked(program, groups, carried, name, kept=kept) or False


def _unchecked(loop, entries, count, carry, kept):
    """(the final carry, `kept`: the carry each iteration started from, where not None) of `loop`
    (a `_fast` one, or None) run over every entry, where it ran them all and the final carry is
    finite; else None, and the caller runs its checked loop, which stops where the exact code
    must run an iteration (the numbers are the same: only the checks are left out)."""
    if not loop:
        return None
    done, out, failed = loop(entries, list(carry), (), kept, None)
    if failed is None and done == count and all(finite(c) for c in out):
        return list(out), kept
    return None


def _walk(loop, entries, count, carry, exact, kept, extra):
    """Run `loop` over the iterator `entries` (`count` of them) from `carry`, each iteration j it
    stops at by `exact(j, carry) -> (carry, extra outputs)`, appending the carry each iteration
    started from to `kept` and its extra outputs to `extra` (where not None); the final carry."""
    carry, j = list(carry), 0
    while j < count:
        if loop:
            done, carry, failed = loop(entries, carry, (), kept, extra)
            if failed is None:
                return list(carry)
            j += done
        if kept is not None:
            kept.append(tuple(carry))
        carry, more = exact(j, list(carry))
        if extra is not None:
            extra.append(tuple(more))
        j += 1
    return list(carry)
