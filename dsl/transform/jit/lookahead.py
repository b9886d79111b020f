"""The trace a loop body is staged on while jit runs one iteration ahead (rolling.py): it refuses
what cannot be staged once for every iteration, and guards the numerics check of a branch run
both ways (both_ways.py) only where that branch is taken."""

import numpy as np

from ...core import stage as S
from ...core.ops.compare import logical_not, logical_or
from ...core.tape import Box


class NotRollable(Exception):
    """The loop body cannot be staged once for all iterations (see rolling.py's docstring)."""


class Lookahead(S.StageTrace):
    """The staging trace of one iteration run ahead: nothing may escape it. `draws`: whether a
    keyless draw may be staged in the body (see `effect`); `as_data`: whether it is one of the
    body's inputs instead, the numbers drawn before the loop (a Scan's: scan_body.scan_loop);
    `scans`: whether the body will be a Scan's, whose rules differentiate a Scan in it at any depth
    (a Loop step in it, the numpy backend's, has rules for two reverse levels); `flat`: whether
    the loops met in the body are written out in it."""

    __slots__ = ("draws", "as_data", "drawn", "walk", "set_rows", "whiles", "flat", "taken", "conditioned")

    def __init__(self, derived=False, draws=False, as_data=False, scans=False, flat=False):
        super().__init__(derived=derived)
        self.scans = scans      # the body is a Scan's: a `for` loop in it is a Scan step too
        self.flat = flat        # every loop in the body is written out (Roller._roll)
        self.draws = draws
        self.as_data = as_data
        self.drawn = []     # (the input's box, the draw, its arguments and keywords), in order
        self.walk = None    # (the loop variable's box, the range it takes) of a for loop's body
        self.set_rows = {}  # slot of a SetRow's result -> its arguments (tensor, row, value), for both_ways
        self.whiles = []    # the while loops written out in the body (Rollers: Body.inner_whiles)
        self.taken = None   # while a branch runs both ways: the staged bool that it is taken
        self.conditioned = set()    # slots of the guards that hold only where their branch is taken

    def process(self, op, args, unboxed, parents, kw, span):
        """Record the primitive, unless it would reach a value of an outer trace or call Python."""
        if op in ("HostCall", "HostVjp"):
            # a host function is Python, whose side effects the look ahead would do once too often
            raise NotRollable("the body calls a host function (Python code, run once per iteration)")
        for u in unboxed:
            if type(u) is Box:
                raise NotRollable(f"the body reads a value from outside the loop's variables ({op})")
        out = super().process(op, args, unboxed, parents, kw, span)
        if op == "SetRow" and type(out) is Box:
            self.set_rows[out.g] = args
        return out

    def concretize(self, box):
        """Guard a value read as a constant. The numerics check of a gradient computed in a branch
        run both ways (its AllFinite) is guarded where the branch is taken only: on iterations
        that take the other branch the interpreter never computes that gradient, so a NaN in it
        there must not fail the compiled loop (a leapfrog's `if i < n - 1 { p = p + eps *
        grad(logp)(q) }`)."""
        taken = self.taken
        if taken is None or box.g in self.seen or getattr(self.slots[box.g], "op", None) != "AllFinite":
            return super().concretize(box)
        self.seen.add(box.g)
        super().concretize(logical_or(logical_not(taken), box))
        self.conditioned.add(self.nodes[-1].g)

    def effect(self, staging, fn, args, kw):
        """An effect in the body must happen on each iteration, and once: the loop is written out,
        except for a draw from the interpreter's generator in a loop no derivative is taken
        through: the look ahead performs it on a generator it puts back afterwards
        (Roller._look_ahead), and the body's program performs it on each iteration, in order (an
        iteration stopped partway puts the generator back before it runs again: loop_body.Driver).
        Under one reverse level the history keeps the generator's state as each iteration began,
        and the pass back runs each iteration again from it (Body.back); under forward mode alone,
        the loop of P' draws as P's would (Body.jvp_body stages the draws as effects of P'); under
        two reverse levels, or a forward and a reverse one, the loop is written out, unless the
        body is a Scan's (`as_data`) and the draw's arguments are constants: then each
        iteration's numbers are drawn before the loop, in order, and reach the body as one of its
        inputs (a while loop's for the count it makes from here: scan_body.scan_loop)."""
        if type(fn) is not S.Draw:
            raise NotRollable("the body has an effect (print, the clock, a file)")
        if self.as_data and not any(type(a) is Box for a in args):
            out = fn(*args, **kw)       # the look ahead's generator is put back (Roller._look_ahead)
            if type(out) is float or (type(out) is np.ndarray and out.dtype == np.float64):
                box = self.box(out, "Arg", (), (), None, None)
                self.drawn.append((box, fn, tuple(args), dict(kw)))
                return box
        if not self.draws:
            raise NotRollable("the body draws from the interpreter's random stream under two reverse levels, "
                              "or a forward and a reverse one (a draw with key= rolls)")
        return super().effect(staging, fn, args, kw, inside=True)
