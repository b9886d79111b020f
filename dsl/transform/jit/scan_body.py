"""The body of a Scan (dsl/core/primitives/scan.py): a staged program run as a loop compiled
whole, and the bodies derived from it (its pullback, the pullback's pullback, ...), each
staged once. jit rolls a loop under three or more reverse levels as a Scan (rolling.py)."""

from ...backends.codegen import compile_loop, compile_program, run_code
from ...core import stage as S
from ...core.primitives.loops import LoopGuardFailed
from ...core.primitives.scan import scan


class ScanBody:
    """A program (item, xs..., carry..., consts...) -> (carry..., ys...), with `counts` (xs,
    carry, consts, ys). The loop's own body (`exact` None) has the Roller's Body as `origin`: a
    guard of it that fails on some iteration is the loop's (LoopGuardFailed: jit stages again
    with the loop written out), and its iterations are steps of the run's limits. A derived
    body (a pullback) keeps the function it was staged from (`exact`): an iteration on which one
    of its guards fails (a rule's branch went another way) runs through that function."""

    __slots__ = ("program", "counts", "origin", "exact", "name", "_derived", "_code", "_loops")

    def __init__(self, program, counts, origin, exact=None, name="scan_body"):
        self.program = program
        self.counts = counts
        self.origin = origin
        self.exact = exact
        self.name = name
        self._derived = {}      # what a rule asked for -> the ScanBody derived from this one
        self._code = None
        self._loops = {}        # (keeps the ys, keeps the history) -> the loop compiled whole

    @property
    def where(self):
        """The loop's line, for messages."""
        return self.origin.where

    def derive(self, key, make):
        """The body `make()` gives, (program, function, counts), made once per key."""
        found = self._derived.get(key)
        if found is None:
            program, exact, counts = make()
            found = self._derived[key] = ScanBody(program, counts, self.origin, exact, self.name + "_back")
        return found

    def apply(self, values):
        """One iteration through the primitives (outer traces record it): the output leaves."""
        try:
            return list(S.output_leaves(self.program, values))
        except S.GuardFailed as failed:
            if self.exact is None:
                raise LoopGuardFailed(self.origin, failed) from None
        return list(self.exact(values))

    def run(self, columns, carry, consts, keep_ys=True, keep_hist=True):
        """The loop over the rows of `columns` (the items, then each of the xs) on plain values,
        compiled whole: (final carry, each iteration's ys, each iteration's starting carry: empty
        lists where not kept). An iteration the compiled loop stops at runs by itself (`_one`),
        and the loop goes on after it."""
        nx, nc, nk, ny = self.counts
        key = (keep_ys, keep_hist)
        loop = self._loops.get(key)
        if loop is None:
            loop = self._loops[key] = compile_loop(self.program, 1 + nx, nc, f"{self.name}_loop", kept=keep_hist,
                                                   extra=keep_ys)
        hist, ys, carry, j, n = [], [], list(carry), 0, len(columns[0])
        entries = zip(*columns)     # a list only where the loop stops partway (below)
        kept, extra = hist if keep_hist else None, ys if keep_ys else None
        limits = self.origin.key.interp.limits if self.exact is None else None
        while j < n:
            done, carry, failed = loop(entries[j:] if j and type(entries) is list else entries, carry, consts, kept,
                                       extra)
            j += done
            if failed is None:
                break
            if type(entries) is zip:
                entries = list(zip(*columns))
            if keep_hist:
                hist.append(tuple(carry))
            out = self._one([*entries[j], *carry, *consts])
            carry = out[:nc]
            if keep_ys:
                ys.append(tuple(out[nc:]))
            j += 1
        if limits is not None:      # the loop's iterations, as the interpreter counts them
            limits.steps += n
            if limits.steps >= limits.next_check:
                limits.check(self.origin.key.span)
        return list(carry), ys, hist

    def _one(self, values):
        """One iteration on plain values, by the program's code for one iteration, or exactly."""
        if self._code is None:
            self._code = compile_program(self.program, self.name)
        try:
            return run_code(self.program, self._code, values)
        except S.GuardFailed as failed:
            if self.exact is None:
                raise LoopGuardFailed(self.origin, failed) from None
        return self.exact(values)


def scan_loop(body, items, state):
    """A loop's remaining iterations as one Scan step: the Roller's Body P (item, state...) ->
    state, the carry its state; the Scan's result (final state..., history...)."""
    return scan(*state, body=ScanBody(body.forward, (0, len(state), 0, 0), body), items=items)
