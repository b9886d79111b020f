"""Loop and LoopBack: a `for` loop over a range or a `while` loop, staged once and run as a loop
(jit, reference 6).

When jit stages a function, a `for` loop over a range can be recorded as one
step instead of one copy of its body per iteration (dsl/transform/jit/rolling.py decides
when, and holds the staged body, `Body`): the body is staged once as a program `P` from the loop's state (the
numbers and tensors of the function's variables) to its next state, and
`Loop(state..., body, items)` runs `P` once per item. Its result is a tuple: the
final state, then the states each iteration started from (the history), which
its reverse rule needs.

- Reverse mode: `LoopBack(history, cotangents..., body, items)` walks the
  iterations backwards through `Q`, the body's pullback staged once (the body
  replayed from a recorded state on a fresh tape, then its reverse pass). A
  state variable the body does not change still goes through `Q`, where its
  cotangents add up, which is what a loop-invariant input's gradient is.
- Forward mode: the loop of `P'`, P's jvp staged once (state and tangents in,
  next state and tangents out), as JAX's jvp of a scan is a scan. Under a reverse
  level too (jvp of grad: Hessian-vector products), the reverse pass through it
  is LoopBack over `P'` with the cotangent's tangent and the cotangent swapped
  (`JvpHistory.back`): the reverse of the jvp is the jvp of the reverse.
- vmap: the loop of vmap(P), P replayed once by the batching rules and compiled
  (`_loop_batch`); LoopBack's rule runs that batched body's pullback.
- Two reverse levels while jit stages (grad of grad): the inner level's Loop and
  LoopBack are recorded on the outer one too, whose reverse pass runs them
  backwards as loops again (dsl/core/primitives/loop_twice.py).
- Deeper (a third reverse level, or a forward level beside two) jit records a Scan
  instead (dsl/core/primitives/scan.py). Any other transformation (grad of a jitted
  grad) sees the iterations themselves: the kernels replay `P` (or the pullback)
  once per item through the primitives, so the transformation records each one, exactly.
- A guard of `P` that fails on some iteration (its control flow went another
  way) raises `LoopGuardFailed`: while jit stages, that makes it stage the
  function again with this loop written out; a compiled call stages again.
- A while loop's Loop has no items (`items=None`): it runs `P` until a guard of
  P fails and gives the state that iteration started from (the statement goes
  on as written from there: dsl/transform/jit/rolling.py). The number of iterations it
  ran is the length of its history, which LoopBack reads (`iterations`).
"""

from .. import reverse_pass, stage as S, tape
from ..ops.finite import finite
from ..ops.slots import unpack
from ..tape import Box, FORWARD, REVERSE, SlotGrad, STAGE, peek
from ..trees import cotangent_value, is_differentiable_leaf, zero_of
from .batching import Lanes, Unbatchable, batch_size, spread_where
from .loop_iteration import _cotangents, _iteration_tape, pullback
from .loop_twice import (_back_added_kernel, back_with_history, history_top, iterations, loop_back_rule,
                         over_stage)
from .registry import define


class LoopGuardFailed(S.GuardFailed):
    """A staged loop body met a value other than the one it was staged with, on a later iteration."""

    def __init__(self, body, failed, program=None):
        super().__init__(-1)
        self.loop = body.key
        # the program whose guard failed: the body's, or a form of it that was run instead (its
        # forward part split from the pullback, a Scan's body), whose steps number differently
        program = body.forward if program is None else program
        step = program.steps[failed.step] if 0 <= failed.step < len(program.steps) else None
        span = program.span(step[5]) if step is not None else None
        self.span = span        # the condition's (a while loop written out in the body may have it)
        self.inner_whiles = getattr(body, "inner_whiles", ())
        self.why = (f"a condition in the loop at {body.where} went another way on a later iteration"
                    + (f" (at {span.where()})" if span is not None else ""))


class DrawsUnderForward(LoopGuardFailed):
    """A recording's loop whose body draws from the interpreter's generator (staged with no
    derivative in view), replayed in forward mode where P' does not stage once (or a reverse pass
    will read its history: hessian of a jitted function): a replay of the iterations under a stage
    would hold one iteration's numbers as constants. The recording does not apply: jit stages the
    function again, where such a loop is written out (dsl/transform/jit/rolling.py)."""

    def __init__(self, body):
        super().__init__(body, S.GuardFailed(-1))
        self.why = (f"the loop at {body.where} draws from the interpreter's random stream, and a "
                    f"derivative in forward mode needs it written out")


class History(list):
    """The states each iteration started from (the entries), what the body's split pullback
    kept of each iteration (`residuals`, dsl/transform/jit/split.py; empty where there is none), the
    Body that ran them (a batched loop's, which vmap's rule for LoopBack reads), and, where the
    body draws from the interpreter's generator, its state as each iteration began (`draws`): the
    pass back runs an iteration again from that state, so it draws what the iteration drew."""

    __slots__ = ("residuals", "body", "draws")
    takes_cotangent = True      # under two reverse levels, a cotangent per entry (loop_twice.py)

    def __init__(self, body=None):
        super().__init__()
        self.residuals = []
        self.body = body
        self.draws = []


def stage_pullback(body, item, state, cts):
    """Q: the pullback of one iteration staged as a program over (item, state..., cotangents...),
    or None where a guard fails. A body that draws from the interpreter's generator keeps its
    draws as effects of Q, performed on each run (Body.back runs each iteration's from the
    generator's state that iteration began with), not as constants drawn once."""
    trace = StagedDraws() if body.draws else S.StageTrace()
    args = [trace.box(v, "Arg", (), (), None, None) for v in (item, *state, *cts)]
    n = len(state)
    try:
        out = tuple(pullback(body, args[0], args[1:n + 1], args[n + 1:], [trace] if body.draws else None))
        return S.program_of(trace, args, out)
    except S.GuardFailed:
        return None


class StagedDraws(S.StageTrace):
    """The staging of a pullback or a jvp whose body draws: each draw is performed now (the caller
    puts the generator back) and kept in the program, to be performed again on each run."""

    def effect(self, staging, fn, args, kw, inside=False):
        return super().effect(staging, fn, args, kw, inside=True)


# ---------------------------------------------------------------- the kernels
def _loop_kernel(*state, body=None, items=(), history=False, nested=False, **_):
    """Run the body once per item; (final state..., history or None). `nested`: the loop is
    rolled under two reverse levels (dsl/core/primitives/loop_twice.py)."""
    top = tape.top_trace(state)
    if top is not None:
        if top.kind is FORWARD:
            # a loop rolled under two reverse levels, replayed in forward mode (jvp of its jit): its
            # LoopBack keeps a history of cotangents, which a loop of P' does not give (JvpHistory)
            rolled = None if nested else _loop_jvp(top, state, body, items, history)
            if rolled is not None:
                return rolled
            if body.draws:
                raise DrawsUnderForward(body)
            return _loop_replayed(body, items, state, history)
        if top.kind is REVERSE and history and not (nested and over_stage(state, top)):
            # a recording's own LoopBack reads this history (grad of jit of grad): the outer
            # reverse level must see how each iteration's state came from its inputs
            return _loop_replayed(body, items, state, True)
        if top.kind is REVERSE or top.kind is STAGE:
            kw = {"body": body, "items": items, "history": history or top.kind is REVERSE}
            if nested:
                kw["nested"] = True
            if top.kind is REVERSE:
                kw["check"] = top.check
            return tape.record("Loop", state, kw)
        return _loop_replayed(body, items, state, history)
    kept = body.history(items, state) if history else None
    return (*body.run(items, state, kept), kept)


def split_tangents(values, diff, trace):
    """The values without `trace`'s boxes, and the tangents on it of those `diff` marks (a zero
    for a value it does not carry)."""
    primal, tangents = [], []
    for x, d in zip(values, diff):
        mine = type(x) is Box and x.trace is trace
        primal.append(x.v if mine else x)
        if d:
            tangents.append(x.t if mine else zero_of(peek(x)))
    return primal, tangents


def with_tangents(values, diff, tangents, trace, op):
    """The values, those `diff` marks boxed on forward trace `trace` with the next tangent."""
    dots = iter(tangents)
    out = []
    for v, d in zip(values, diff):
        if d:
            v = Box(v, trace, op, (), (), None, None)
            v.t = next(dots)
        out.append(v)
    return out


class JvpHistory:
    """The history of a loop run in forward mode: that of the loop of P' (each iteration's state
    and tangents), which the reverse pass through the loop reads (`back`)."""

    __slots__ = ("body", "kept", "trace")

    def __init__(self, body, kept, trace):
        self.body = body        # the Body of P'
        self.kept = kept
        self.trace = trace      # the forward trace whose tangents the loop carried

    def back(self, cts, items, wanted):
        """The cotangents of the first state (carrying their tangents) from those of the final one:
        LoopBack over P' given (the cotangents' tangents, the cotangents) gives (the tangents of
        the result, the result), as the jvp of a pullback is the pullback of the jvp."""
        diff, m = self.body.diff, len(cts)
        primal, dots = split_tangents(cts, (True,) * m, self.trace)
        if wanted is not None:
            wanted = tuple(wanted) + tuple(w for w, d in zip(wanted, diff[:len(diff) - m]) if d)
        out = _loop_back_kernel(self.kept, *dots, *primal, body=self.body, items=items, wanted=wanted)
        out = unpack(out) if type(out) is Box else out
        return tuple(with_tangents(out[m:], (True,) * m, out[:m], self.trace, "LoopBack"))


def _loop_jvp(top, state, body, items, history):
    """The loop in forward mode as one loop of P' (see the module docstring), or None where P'
    does not stage, or where a reverse pass will read the history and P runs a custom_vjp rule,
    whose jvp's pullback is not its pullback's jvp, or draws (that pass would not run each
    iteration's draws again): the iterations are then replayed."""
    if history and (body.user_rules or body.draws):
        return None
    primal, tangents = split_tangents(state, body.diff, top)
    first = 0 if items is None else items[0] if len(items) else None
    jbody = body.jvp_body(first, primal, tangents) if first is not None else None
    if jbody is None:
        return None
    out = _loop_kernel(*primal, *tangents, body=jbody, items=items, history=history)
    body.ran = jbody.ran        # a while loop's count, for the Roller (P' ran in P's place)
    parts = unpack(out) if type(out) is Box else out
    n, m = len(primal), len(tangents)
    result = with_tangents(parts[:n], body.diff, parts[n:n + m], top, "Loop")
    return (*result, JvpHistory(jbody, parts[n + m], top) if history else None)


def _loop_replayed(body, items, state, history):
    """The iterations through the primitives, for a transformation that must see each one.

    A guard of the body that fails on some iteration is the loop's (LoopGuardFailed), as when the
    compiled body runs: jit stages again with the loop written out. A while loop's (`items` None)
    ends there instead: what the failed iteration recorded on an outer stage (its guard, the value
    that went another way) is that stage's record of where the loop stopped.

    A body that draws from the interpreter's generator notes its state as each iteration began
    (History.draws: the pass back runs each again from there, `_loop_back_kernel`), and the
    iteration a while loop stops at puts it back: the statement runs that one again as written."""
    generator = body.generator()        # None where the body does not draw
    kept = (History(body) if generator is not None else []) if history else None
    state = list(state)
    if items is None:
        k = 0
        while True:
            at = generator.state if generator is not None else None
            try:
                after = list(S.run(body.forward, [k, *state]))
            except S.GuardFailed:
                if generator is not None:
                    generator.state = at
                return (*state, kept)
            if kept is not None:
                kept.append(state)
                if generator is not None:
                    kept.draws.append(at)
            state = after
            k += 1
            body.count_step()
    for item in items:
        if kept is not None:
            kept.append(state)
            if generator is not None:
                kept.draws.append(generator.state)
        try:
            state = list(S.run(body.forward, [item, *state]))
        except S.GuardFailed as failed:
            raise LoopGuardFailed(body, failed) from None
    return (*state, kept)


def _loop_back_kernel(kept, *cts, body=None, items=(), wanted=None, spread=None, history=False, nested=False):
    """The cotangents of the loop's first state, from those of its final state (`wanted`: which
    state leaves' cotangents the caller reads; the others may come back as they went in;
    `spread`: a batch size, the history being one example's, its float leaves repeated for each:
    vmap's rule). Under two reverse levels (`nested`, dsl/core/primitives/loop_twice.py) it is
    recorded on the inner of them as a step, keeping its own history (`history`): then the
    cotangents each iteration started from follow the first state's."""
    if type(kept) is JvpHistory:
        return kept.back(cts, items, wanted)
    # the history is a list (or a staged box of one) whose entries may hold boxes of outer traces
    top = history_top(kept, cts)
    if nested and top is not None and top.kind is REVERSE and over_stage((kept,), top):
        kw = {"body": body, "items": items, "wanted": None, "history": True, "nested": True}
        out = unpack(tape.record("LoopBack", (kept, *cts), kw))
        return out[:len(cts)]
    # vmap's look at a function (a dry stage) records it only for a history it staged
    if top is not None and top.kind is STAGE and (not top.dry or type(kept) is Box):
        kw = {"body": body, "items": items, "wanted": wanted}
        if spread is not None:
            kw["spread"] = spread
        if history:
            kw["history"] = True
        return tape.record("LoopBack", (kept, *cts), kw)
    if history:
        if type(kept) is Box:
            kept = tape.strip_unstaged(kept)
            top = history_top(kept, cts)
        return back_with_history(body, iterations(items, kept), kept, cts, top)
    if type(kept) is Box:
        kept = tape.strip_unstaged(kept)
    if top is None:
        return _loop_back_plain(kept, *cts, body=body, items=items, wanted=wanted, spread=spread)
    if spread is not None:
        kept = _spread_history(kept, body.diff, spread)
    items = iterations(items, kept)
    ct = list(cts)
    # each iteration run again draws what it drew, from the generator's state as it began
    rewind = body.rewinder(kept)        # None where the body does not draw
    with S.put_back(body.generator() if rewind is not None else None):
        for k in range(len(items) - 1, -1, -1):
            if rewind is not None:
                rewind(k)
            ct = pullback(body, items[k], kept[k], ct)
    return tuple(ct)


def _loop_back_plain(kept, *cts, body=None, items=(), wanted=None, spread=None, history=False, nested=False):
    """LoopBack's kernel on plain values (what compiled code calls: see registry.py's `plain`)."""
    if type(kept) is JvpHistory:
        return kept.back(cts, items, wanted)
    if history:
        return back_with_history(body, iterations(items, kept), kept, cts, None)
    if spread is not None:
        kept = _spread_history(kept, body.diff, spread)
    return tuple(body.back(iterations(items, kept), kept, cts, wanted))


def _spread_history(kept, diff, size):
    """One example's history with its float leaves repeated along a batch of `size`."""
    out = History()
    out.extend(spread_where(entry, diff, None, size) for entry in kept)
    return out


def _loop_rule(ns, g, ans, state, kw, wanted):
    """Reverse mode through a loop: LoopBack from the cotangents of the final state."""
    body = kw["body"]
    n = len(state)
    slots = g.slots if type(g) is SlotGrad else [None] * (n + 1)
    kept = unpack(ans)[n] if type(ans) is Box else ans[n]
    cts = []
    for j, (x, d) in enumerate(zip(state, body.diff)):
        if d:
            c = slots[j]
            cts.append(zero_of(x) if c is None else cotangent_value(c, x))
    nested = kw.get("nested", False)
    if slots[n] is not None:
        # the history's cotangents: an outer reverse pass through this loop's pullback (loop_twice.py)
        out = _back_added_kernel(kept, slots[n], *cts, body=body, items=kw["items"])
    else:
        out = _loop_back_kernel(kept, *cts, body=body, items=kw["items"], wanted=None if nested else tuple(wanted),
                                nested=nested)
    back = unpack(out) if type(out) is Box else out
    if kw.get("check") and not all(finite(peek(c)) for c in back):
        kw["culprit"] = _culprit(body, kw["items"], kept, cts)
    it = iter(back)
    grads = []
    for x, d, w in zip(state, body.diff, wanted):
        c = next(it) if d else None
        grads.append(c if w and d and is_differentiable_leaf(x) else None)
    return grads


def _culprit(body, items, kept, cts):
    """The operation of the body whose rule first gave a NaN or an infinity, from the last iteration
    back, as the interpreter's numerics check would name it (reference 6.8), or None.

    It reads the values under any staging boxes without recording: it only names the operation."""
    kept = peek(kept)
    if type(kept) is JvpHistory:     # the check reads primal values: P's, the first part of each of P''s states
        n = len(body.diff)
        kept = [[peek(x) for x in entry[:n]] for entry in peek(kept.kept)]
    items = iterations(items, kept)
    ct = [peek(c) for c in cts]
    rewind = body.rewinder(kept)
    with S.put_back(body.generator()):
        for k in range(len(items) - 1, -1, -1):
            if rewind is not None:
                rewind(k)       # the iteration run again draws what it drew
            state = [peek(x) for x in kept[k]]
            trace, params, seeds = _iteration_tape(body, items[k], state, ct, True)
            found = reverse_pass._reverse(trace.nodes, seeds, True)
            if found is not None:
                return found
            ct = _cotangents(body, trace, params, state)
    return None


# ---------------------------------------------------------------- vmap
def _loop_batch(ns, args, batched, kw):
    """vmap of a staged loop: the loop of vmap(P), P's Body for this batch (Body.batch_body).

    A state leaf is batched if the batch reaches it on some iteration (a fixed point, as JAX's
    rule for scan finds it: a leaf the body updates from a batched one is batched from the
    start); under reverse mode (a history kept) every float leaf is, so that the pullback of
    the batched body gives each example its own cotangents. An int counter stays unbatched
    (Lanes). P's control flow decided by a batched value makes vmap run per example."""
    body, items, history = kw["body"], kw["items"], kw["history"]
    size = batch_size(args, batched)
    flags = S.batched_carry(body.forward, [b or bool(history and d) for b, d in zip(batched, body.diff)])
    state = spread_where(args, flags, batched, size)
    first = items[0] if items else 0        # a while loop's (None) counts from 0
    bbody = body.batch_body(first, state, flags, size)
    out = _loop_kernel(*state, body=bbody, items=items, history=history)
    body.ran = bbody.ran        # a while loop's count, for the Roller
    parts = unpack(out) if type(out) is Box else out
    return Lanes(parts, (*flags, bool(history)))


def _loop_back_batch(ns, args, batched, kw):
    """vmap of a loop's reverse pass: LoopBack over the Body the batched loop ran, from each
    example's cotangents; a history of one example (the loop did not depend on the batch, the
    cotangents do) is spread over the batch as the pass starts."""
    if kw.get("history"):
        raise Unbatchable("a loop's reverse pass under two reverse levels has no batching rule (loop_twice.py)")
    if kw["body"].draws:
        # the batched body would hold each draw as one constant: each example's pass runs alone,
        # from the generator's states the history noted (Body.back)
        raise Unbatchable(f"the reverse pass of the loop at {kw['body'].where} draws from the interpreter's generator")
    kept, cts = args[0], args[1:]
    body, items, h = kw["body"], kw["items"], peek(kept)
    if not len(h):      # a while loop that ran no iteration: the cotangents go through as they are
        return Lanes(cts, batched[1:])
    # a batched history's float leaves all carry the batch (_loop_batch)
    size = batch_size(cts, batched[1:]) if any(batched[1:]) else batch_size(h[0], body.diff)
    cts = spread_where(cts, (True,) * len(cts), batched[1:], size)
    if batched[0]:
        bbody, spread_to = getattr(h, "body", None), None
        if bbody is None:
            raise Unbatchable(f"the reverse pass of the loop at {body.where} has no batched history")
    else:
        first = spread_where(h[0], body.diff, None, size)
        bbody, spread_to = body.batch_body(items[0] if items else 0, first, body.diff, size), size
    return _loop_back_kernel(kept, *cts, body=bbody, items=items, wanted=kw["wanted"], spread=spread_to)


# a body may call custom_vjp (user_code); a Loop whose results nothing reads still decides, by its
# body's guards, whether the recording it is in applies to a later call (guards)
define("Loop", _loop_kernel, vjp_all=_loop_rule, batch=_loop_batch, user_code=True, guards=True)
# LoopBack is recorded by a staging trace, and on a reverse tape only right above one (a loop rolled
# under two reverse levels, whose outer pass takes its rule: loop_twice.py); under any other
# reverse level its kernel replays the pullback through the primitives, recorded one by one
define("LoopBack", _loop_back_kernel, vjp_all=loop_back_rule, batch=_loop_back_batch, plain=_loop_back_plain)


def state_diff(state):
    """Which state leaves take cotangents."""
    return tuple(is_differentiable_leaf(peek(x)) for x in state)


__all__ = ["LoopGuardFailed", "History", "state_diff", "stage_pullback", "split_tangents",
           "with_tangents"]
