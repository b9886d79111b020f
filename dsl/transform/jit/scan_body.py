"""The body of a Scan (dsl/core/primitives/scan.py): a staged program run as a loop compiled
whole, and the bodies derived from it (its pullback, the pullback's pullback, ...), each
staged once. jit rolls a loop under three or more reverse levels as a Scan (rolling.py)."""

from ...backends.codegen import compile_loop, compile_program, compile_unchecked, run_code
from ...backends.in_place import summed_row_adds
import numpy as np

from ...core import stage as S
from ...core.ops.finite import finite
from ...core.ops.shape import index, reshape
from ...core.ops.slots import unpack
from ...core.tape import Box, peek
from ...core.trees import flatten, hollow
from ...core.primitives.loops import LoopGuardFailed
from ...core.primitives.batching import spread_where
from ...core.primitives.scan import rows, scan
from ...core.row_log import StateLog
from ..vmap import replay_leaves


class ScanBody:
    """A program (item, xs..., carry..., consts...) -> (carry..., ys...), with `counts` (xs,
    carry, consts, ys). The loop's own body (`exact` None) has the Roller's Body as `origin`: a
    guard of it that fails on some iteration is the loop's (LoopGuardFailed: jit stages again
    with the loop written out), and its iterations are steps of the run's limits. A derived
    body (a pullback) keeps the function it was staged from (`exact`): an iteration on which one
    of its guards fails (a rule's branch went another way) runs through that function."""

    __slots__ = ("program", "counts", "origin", "exact", "name", "_derived", "_code", "_loops", "_fast", "_looped")

    def __init__(self, program, counts, origin, exact=None, name="scan_body"):
        self.program = program
        self.counts = counts
        self.origin = origin
        self.exact = exact
        self.name = name
        self._derived = {}      # what a rule asked for -> the ScanBody derived from this one
        self._code = None
        self._loops = {}        # (keeps the ys, keeps the history) -> the loop compiled whole
        self._fast = {}         # the same, compiled without checks (None where it may not be: `_unchecked`)
        self._looped = None     # the program the loops compile (in_place.summed_row_adds)

    @property
    def where(self):
        """The loop's line, for messages."""
        return self.origin.where

    def derive(self, key, make):
        """The body `make()` gives, (program, function, counts), made once per key."""
        found = self._derived.get(key)
        if found is None:
            program, exact, counts = make()
            found = self._derived[key] = ScanBody(program, counts, self.origin, exact, f"{self.name}_{key[0]}")
        return found

    def batched(self, flags, size, example):
        """The body batched over `size` examples, staged on `example` (its batched leaves with
        the batch on axis 0): (program, None, counts) for `derive`. `flags`: which xs, carry,
        consts and ys leaves are batched (the carry's and the ys' as the Scan's rule found them).
        A guard of the batched program that fails is the loop's (LoopGuardFailed)."""
        bx, bc, bk, by = flags
        trace = S.StageTrace(derived=True)
        args = [trace.box(v, "Arg", (), (), None, None) for v in example]
        values, reached = replay_leaves(self.program, args, (False, *bx, *bc, *bk))
        values = spread_where(values, (*bc, *by), reached, size)
        return S.program_of(trace, args, tuple(values)), None, self.counts

    def apply(self, values):
        """One iteration through the primitives (outer traces record it): the output leaves."""
        try:
            return list(S.output_leaves(self.program, values))
        except S.GuardFailed as failed:
            if self.exact is None:
                raise LoopGuardFailed(self.origin, failed, self.program) from None
        return list(self.exact(values))

    def run(self, items, xs, carry, consts, keep_ys=True, keep_hist=True, log=False):
        """The loop over the items, and the rows of the xs (tensors), on plain values, compiled
        whole: (final carry, each iteration's ys, each iteration's starting carry: empty lists
        where not kept; with `log`, a StateLog)."""
        kinds = [self.program.kinds[s] for s in self.program.inputs[1:1 + self.counts[0]]]
        columns = (items, *[rows(x, kind) for x, kind in zip(xs, kinds)])

        def entries(k, m):
            return zip(*columns) if k == 0 and m >= len(items) else zip(*(c[k:k + m] for c in columns))
        return self._drive(entries, len(items), carry, consts, keep_ys, keep_hist, log)

    def run_while(self, carry, consts, keep_ys=True, keep_hist=True, log=False):
        """A while loop's iterations (item k the k-th) on plain values until one fails a guard of
        the body: (the carry that iteration started from, each iteration's ys, each one's
        starting carry); the Roller's Body learns the count (`ran`)."""
        return self._drive(lambda k, m: zip(range(k, k + m)), None, carry, consts, keep_ys, keep_hist, log)

    def _drive(self, entries, n, carry, consts, keep_ys, keep_hist, log):
        """Run the compiled loop over `entries(k, m)` (the entries of iterations k to k + m), `n`
        of them (None: a while loop's, until an iteration fails a guard of the body). An
        iteration the compiled loop stops at runs by itself (`_one`), and the loop goes on after
        it. The loop's own iterations (its body's, or a while loop's body's forms) are steps of the
        run's limits: the compiled loop runs at most until the limits' next look, so that a loop
        that never ends is stopped at its line like any other."""
        nc = self.counts[1]
        limits = self.origin.key.interp.limits if self.exact is None or n is None else None
        if limits is None:
            done = self._unchecked(entries(0, n), n, carry, consts, keep_ys, keep_hist, log)
            if done is not None:
                return done
        loop = self._compiled(keep_ys, keep_hist)
        hist, ys, carry, k = StateLog() if log else [], [], list(carry), 0
        kept, extra = hist if keep_hist else None, ys if keep_ys else None
        while n is None or k < n:
            chunk = 2 ** 62 if n is None else n - k
            if limits is not None:
                left = limits.next_check - limits.steps
                chunk = max(min(chunk, int(left) if left < 2 ** 62 else 2 ** 62), 1)
            done, carry, failed = loop(entries(k, chunk), carry, consts, kept, extra)
            k += done
            if limits is not None:
                limits.steps += done
            if failed is not None:
                values = [*next(entries(k, 1)), *carry, *consts]
                if n is None:
                    try:
                        out = self._one(values, stops=True)
                    except S.GuardFailed:       # the iteration that goes another way: the statement goes on
                        self.origin.ran = k
                        return list(carry), ys, hist
                else:
                    out = self._one(values)
                if keep_hist:
                    hist.append(tuple(carry))
                if keep_ys:
                    ys.append(tuple(out[nc:]))
                carry = out[:nc]
                k += 1
                if limits is not None:
                    limits.steps += 1
            if limits is not None and limits.steps >= limits.next_check:
                limits.check(self.origin.key.span)
        return list(carry), ys, hist

    def _compiled(self, keep_ys, keep_hist):
        """The loop compiled whole, keeping the ys and the history each iteration or not."""
        key = (keep_ys, keep_hist)
        loop = self._loops.get(key)
        if loop is None:
            loop = self._loops[key] = compile_loop(self.looped, 1 + self.counts[0], self.counts[1],
                                                   f"{self.name}_loop", kept=keep_hist, extra=keep_ys)
        return loop

    @property
    def looped(self):
        """The program the compiled loops run: the body's, with two rows added at one index
        summed first (in_place.summed_row_adds), so that a row is added in place."""
        if self._looped is None:
            self._looped = summed_row_adds(self.program)
        return self._looped

    def _unchecked(self, entries, n, carry, consts, keep_ys, keep_hist, log):
        """A derived body's loop (a pullback's: no limits count its iterations) compiled without
        checks, as the numpy backend's reverse loop runs (loop_body.Hoisted): (final carry, ys,
        history) where it ran every iteration and its results are finite, else None (the checked
        loop runs it again). Checked on every iteration, the cotangent of x a loop reads row by
        row would be summed in a tensor of x's size made per iteration and checked whole: n^2."""
        key = (keep_ys, keep_hist)
        if key not in self._fast:
            self._fast[key] = compile_unchecked(self.looped, 1 + self.counts[0], self.counts[1], f"{self.name}_fast",
                                                kept=keep_hist, extra=keep_ys)
        fast = self._fast[key]
        if fast is None:
            return None
        hist, ys = StateLog() if log else [], []
        done, out, failed = fast(entries, list(carry), consts, hist if keep_hist else None, ys if keep_ys else None)
        if failed is not None or done != n or not all(finite(c) for c in out) \
                or not all(finite(v) for row in ys for v in row):
            return None
        return list(out), ys, hist

    def _one(self, values, stops=False):
        """One iteration on plain values, by the program's code for one iteration, or exactly
        (`stops`: a while loop's, which a failed guard of the loop's own body ends)."""
        if self._code is None:
            self._code = compile_program(self.program, self.name)
        try:
            return run_code(self.program, self._code, values)
        except S.GuardFailed as failed:
            if self.exact is None:
                if stops:       # a while loop's iteration that goes another way: the loop ends there
                    raise
                raise LoopGuardFailed(self.origin, failed, self.program) from None
        # a derived body's guard (a rule's branch): the iteration runs exactly, where a guard of
        # the loop's own body that fails raises LoopGuardFailed (a while loop: it ends there)
        return self.exact(values)


def scan_loop(body, items, state):
    """A loop's remaining iterations as one Scan step: the Roller's Body P (item, state...) ->
    state; the state's leaves the body changes are the carry, the others its consts (a tensor
    the body only reads, carried, would take a cotangent of its full size in the carry of every
    reverse level: the rows of an RNN's inputs, read one per step, cost the reverse loop time
    in the square of its length). `items` None: a while loop's. The final state (the leaves it
    does not change as they were)."""
    program = body.forward
    moved = [i for i, c in enumerate(body.changed) if c]
    fixed = [i for i, c in enumerate(body.changed) if not c]
    inputs, nd = program.inputs, len(body.drawn)
    drawn = inputs[len(inputs) - nd:]
    carried = program
    if fixed or nd:       # the body's program: its draws (the xs), what it changes, what it only reads
        carried = S.Program(program.nslots, (inputs[0], *drawn, *[inputs[1 + i] for i in moved + fixed]),
                            program.steps, hollow(flatten(tuple(moved))[1]), tuple(program.out_refs[i] for i in moved),
                            tuple(program.out_consts[i] for i in moved), program.kinds, program.spans)
    kinds = [program.kinds[d] for d in drawn]
    scan_body = ScanBody(carried, (nd, len(moved), len(fixed), 0), body)
    if items is None and nd:
        # a while loop that draws: its numbers are the Scan's data, drawn before it, so its count
        # is found first; a call that runs another count fails a guard (the body's, or the
        # loop's last test after it) and is staged again for that count
        items = range(_count(scan_body, kinds, [state[i] for i in moved], [state[i] for i in fixed]))
    xs = _draw_rows(body, kinds, len(items)) if nd else []
    out = scan(*xs, *[state[i] for i in moved], *[state[i] for i in fixed], body=scan_body, items=items)
    out = unpack(out) if type(out) is Box else out
    final = list(state)
    for k, i in enumerate(moved):
        final[i] = out[k]
    return final


class _Draws:
    """The draws of `n` iterations of a loop's body, made in the order the loop makes them: one
    vector of every number, iteration by iteration (a keyless draw gives float64)."""

    __slots__ = ("drawn",)

    def __init__(self, drawn):
        self.drawn = drawn

    def __call__(self, n):
        numbers = [np.ravel(fn(*args, **kw)) for _ in range(n) for fn, args, kw in self.drawn]
        return np.concatenate(numbers) if numbers else np.zeros(0)


def _layout(kinds):
    """The shape and the number of entries of each of one iteration's draws (`kinds`), in the order
    their numbers stand in the vector `_Draws` makes."""
    shapes = [() if kind == "float" else tuple(kind[3]) for kind in kinds]
    return shapes, [int(np.prod(shape)) for shape in shapes]


def _count(scan_body, kinds, carry, consts):
    """The iterations a while loop's Scan body makes from this state before one fails a guard,
    on plain values, each iteration's numbers drawn as it begins; the generator and the run's
    step count put back afterwards (the loop then runs for that count: scan_loop)."""
    body = scan_body.origin
    interp = body.key.interp
    generator, steps = interp.rng.bit_generator, interp.limits.steps
    saved = generator.state
    draws, (shapes, sizes) = _Draws(body.drawn), _layout(kinds)
    made = []       # each iteration's entry, drawn once (the iteration a compiled loop stops at runs again)

    def entries(k, m):
        for i in range(k, k + m):
            if i == len(made):
                numbers, row, at = draws(1), [i], 0
                for size, shape, kind in zip(sizes, shapes, kinds):
                    part = numbers[at:at + size]
                    row.append(float(part[0]) if kind == "float" else part.reshape(shape))
                    at += size
                made.append(tuple(row))
            yield made[i]
    try:
        scan_body._drive(entries, None, [peek(c) for c in carry], [peek(c) for c in consts], False, False, False)
    finally:
        generator.state = saved
        interp.limits.rewind(steps)
    return body.ran


def _draw_rows(body, kinds, n):
    """The numbers the body of a Scan over `n` items draws (`kinds`: of one iteration's draws),
    drawn now by one effect of the staged program, made again on every run as each draw of the
    loop as written would be: per draw, a tensor of one row per iteration."""
    shapes, sizes = _layout(kinds)
    numbers = S.perform(body.key.interp.staging, S.Draw(_Draws(body.drawn)), (n,))
    table = reshape(numbers, (n, sum(sizes)))
    rows, at = [], 0
    for size, shape in zip(sizes, shapes):
        rows.append(reshape(index(table, (slice(None), slice(at, at + size))), (n, *shape)))
        at += size
    return rows
