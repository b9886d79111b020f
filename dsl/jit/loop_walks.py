"""The walks of a loop rolled under two reverse levels (dsl/primitives/loop_twice.py) on plain
values: LoopBack keeping its cotangents, LoopBackT and LoopBackAdd, each with its body staged
once from an iteration's values and its loop compiled whole (codegen.compile_loop). An
iteration a compiled loop stops at (a guard of its body that went another way, a result the
code cannot vouch for) runs exactly, through the primitives, and the loop goes on after it."""

from ..autodiff import stage as S
from ..primitives.loop_twice import back_added, back_reversed
from ..primitives.loops import pullback
from .codegen import compile_loop


class Walks:
    """A Body's three walks, each staged and compiled on its first run."""

    __slots__ = ("body", "n", "_loops")

    def __init__(self, body):
        self.body = body
        self.n = len(body.forward.inputs) - 1     # state leaves
        self._loops = {}        # name -> compiled loop, or False where its body does not stage

    def back(self, items, kept, cts):
        """LoopBack on plain values: (c_0..., c_{k+1} for each iteration k)."""
        body, n, m = self.body, self.n, len(cts)
        if not len(items):
            return (*cts, [])
        loop = self._loop("back", lambda a: pullback(body, a[0], a[1:1 + n], a[1 + n:]),
                          (items[-1], *kept[-1], *cts), (None, n), m, kept=True)
        got = []
        c0 = _walk(loop, zip(reversed(items), reversed(kept)), lambda j: (items[-1 - j], kept[-1 - j]), cts,
                   lambda e, c: (pullback(body, e[0], list(e[1]), c), ()), got, None)
        got.reverse()
        return (*c0, got)

    def back_reversed(self, items, kept, cthist, u):
        """LoopBackT on plain values: (u_N..., s̄_k for each iteration k)."""
        body, n, m = self.body, self.n, len(u)
        if not len(items):
            return (*u, [])

        def both(a):
            unext, sbar = back_reversed(body, a[0], a[1:1 + n], a[1 + n:1 + n + m], a[1 + n + m:])
            return (*unext, *sbar)

        loop = self._loop("back_reversed", both, (items[0], *kept[0], *cthist[0], *u), (None, n, m), m,
                          extra=True)
        sbars = []
        uN = _walk(loop, zip(items, kept, cthist), lambda j: (items[j], kept[j], cthist[j]), u,
                   lambda e, c: back_reversed(body, e[0], list(e[1]), list(e[2]), c), None, sbars)
        return (*uN, sbars)

    def back_added(self, items, kept, hbar, cts):
        """LoopBackAdd on plain values: c_0."""
        body, n, m = self.body, self.n, len(cts)
        if not len(items):
            return list(cts)
        loop = self._loop("back_added", lambda a: back_added(body, a[0], a[1:1 + n], a[1 + n:1 + n + m],
                                                             a[1 + n + m:]),
                          (items[-1], *kept[-1], *hbar[-1], *cts), (None, n, m), m)
        return _walk(loop, zip(reversed(items), reversed(kept), reversed(hbar)),
                     lambda j: (items[-1 - j], kept[-1 - j], hbar[-1 - j]), cts,
                     lambda e, c: (back_added(body, e[0], list(e[1]), list(e[2]), c), ()), None, None)

    def _loop(self, name, fn, example, groups, carried, kept=False, extra=False):
        """The walk's loop compiled, its body `fn` (a list of inputs -> outputs) staged on
        `example`; False where it does not stage."""
        found = self._loops.get(name)
        if found is None:
            trace = S.StageTrace()
            args = [trace.box(v, "Arg", (), (), None, None) for v in example]
            try:
                program = S.program_of(trace, args, tuple(fn(args)))
                found = compile_loop(program, groups, carried, f"loop_{name}", kept, extra)
            except S.GuardFailed:
                found = False
            self._loops[name] = found
        return found


def _walk(loop, entries, entry_at, carry, exact, kept, extra):
    """Run `loop` over the iterator `entries` from `carry`, each iteration it stops at by
    `exact(entry, carry) -> (carry, extra outputs)` (entry_at(j): the j-th entry), appending the
    carry each iteration started from to `kept` and its extra outputs to `extra` (where not None);
    the final carry."""
    carry, k = list(carry), 0
    while True:
        if loop:
            done, carry, failed = loop(entries, carry, (), kept, extra)
            if failed is None:
                return list(carry)
            k += done
            entry = entry_at(k)
        else:
            entry = next(entries, None)
            if entry is None:
                return carry
        if kept is not None:
            kept.append(tuple(carry))
        carry, more = exact(entry, list(carry))
        if extra is not None:
            extra.append(tuple(more))
        k += 1
