"""Limits that stop runaway programs with a `limit` error instead of a crash or a hang:
call depth, an optional step budget and an optional wall-clock timeout.

Every loop iteration and every function call is one step, counted in one
counter per run (so nested loops of any sizes add up). The counter is
compared with `next_check`, the next step at which `check` must look: the
budget itself when there is only a step budget, and with a timeout a point
that adapts to how long steps take, so that the clock is read about every
few milliseconds whether an iteration takes a microsecond or a second.
"""

import math
import sys
import threading
import time

from ..errors import error

DEFAULT_MAX_DEPTH = 10_000
MAX_DEPTH = 1_000_000       # beyond this, a stack for it (8 KiB per call) would not fit in memory
# Python frames one dg call may use (call site, function body, statements, expressions).
FRAMES_PER_CALL = 30
SAFE_RECURSION = 32_000     # a Python recursion limit safe on any thread's stack
NEVER = math.inf
CHECK_EVERY = 0.005         # seconds: how often, at most, a run with a timeout reads the clock


def check_settings(max_depth, max_steps, timeout):
    """The limits a host may ask for, checked: a ValueError (or TypeError) saying what is wrong."""
    if type(max_depth) is not int:
        raise TypeError(f"max_depth must be an int, got {max_depth!r}")
    if not 1 <= max_depth <= MAX_DEPTH:
        raise ValueError(f"max_depth must be between 1 and {MAX_DEPTH:,}, got {max_depth:,}")
    if max_steps is not None:
        if type(max_steps) is not int:
            raise TypeError(f"max_steps must be an int or None, got {max_steps!r}")
        if max_steps < 1:
            raise ValueError(f"max_steps must be at least 1, got {max_steps:,}")
    if timeout is not None:
        if type(timeout) not in (int, float):
            raise TypeError(f"timeout must be a number of seconds or None, got {timeout!r}")
        if not (timeout > 0 and math.isfinite(timeout)):
            raise ValueError(f"timeout must be a finite number of seconds above 0, got {timeout!r}")


class _RecursionLimit:
    """Python's recursion limit is one per process: runs in several threads raise it together
    (to the largest any of them needs) and the last one to finish puts the host's value back."""

    def __init__(self):
        self.lock = threading.Lock()
        self.needs = []
        self.baseline = None

    def raise_to(self, need):
        """A run that needs `need` begins."""
        with self.lock:
            if not self.needs:
                self.baseline = sys.getrecursionlimit()
            self.needs.append(need)
            sys.setrecursionlimit(max([self.baseline, *self.needs]))

    def release(self, need):
        """That run ended."""
        with self.lock:
            self.needs.remove(need)
            sys.setrecursionlimit(max([self.baseline, *self.needs]))


RECURSION = _RecursionLimit()


class Limits:
    """Counters checked by function calls and loop iterations."""

    __slots__ = ("max_depth", "depth", "steps", "max_steps", "timeout", "deadline", "next_check",
                 "interval", "last_check")

    def __init__(self, max_depth=DEFAULT_MAX_DEPTH, max_steps=None, timeout=None):
        check_settings(max_depth, max_steps, timeout)
        self.max_depth = max_depth
        self.depth = 0
        self.steps = 0
        self.max_steps = max_steps
        self.timeout = timeout
        self.deadline = None
        self.next_check = NEVER
        self.interval = 1
        self.last_check = 0.0
        # Python's recursion limit is global to the process: raise it only as far as any thread's
        # stack allows; a run raises it further, on a stack sized for it, while it lasts.
        if sys.getrecursionlimit() < SAFE_RECURSION:
            sys.setrecursionlimit(SAFE_RECURSION)

    def recursion_limit(self):
        """The Python recursion limit a run with this call depth needs."""
        return self.max_depth * FRAMES_PER_CALL + 2000

    def start(self):
        """A run begins: reset the step count and arm the timeout."""
        self.depth = 0
        self.steps = 0
        self.interval = 1
        self.last_check = time.monotonic()
        self.deadline = self.last_check + self.timeout if self.timeout else None
        self._plan()

    def _plan(self):
        """Set the step at which `check` looks next."""
        budget = NEVER if self.max_steps is None else self.max_steps + 1
        self.next_check = min(budget, self.steps + self.interval) if self.deadline is not None else budget

    def check(self, span=None):
        """Called when `steps` reaches `next_check`: stop if a budget is spent (error at `span`)."""
        if self.max_steps is not None and self.steps > self.max_steps:
            raise error("limit", f"the program ran more than {self.max_steps:,} steps", span,
                        hint="raise the budget with --max-steps or Interpreter(max_steps=...)")
        if self.deadline is not None:
            now = time.monotonic()
            if now > self.deadline:
                raise error("limit", f"the program ran longer than {self.timeout:g} "
                                     f"second{'' if self.timeout == 1 else 's'}", span,
                            hint="raise it with --timeout or Interpreter(timeout=...)")
            # read the clock about every CHECK_EVERY seconds: fewer steps between looks when
            # steps are slow (a big matmul per iteration), more when they are fast
            if now - self.last_check < CHECK_EVERY / 4:
                self.interval = min(self.interval * 2, 4096)
            elif now - self.last_check > CHECK_EVERY:
                self.interval = max(self.interval // 2, 1)
            self.last_check = now
        self._plan()

    def rewind(self, steps):
        """Put the step count back to `steps` (work run ahead, which the run makes again: a loop
        counted before it runs), the next look planned from there."""
        self.steps = steps
        self._plan()

    def poll(self, span=None):
        """A look at the clock from work that is not steps (reading a long file): the timeout error
        if the run is past its deadline."""
        if self.deadline is not None and time.monotonic() > self.deadline:
            self.check(span)

    def too_nested(self, span):
        """The error when Python's own stack runs out first (deep data, deep closures, C recursion)."""
        return error("limit", "the program nests too deeply: calls inside calls, or values inside "
                              "values, go deeper than the interpreter's stack allows", span,
                     hint="raise the limit with --max-depth or Interpreter(max_depth=...)")

    def too_deep(self, span):
        """The error for recursion past the depth limit."""
        return error("limit", f"too many nested calls (more than {self.max_depth:,}); "
                              "is there a recursion without an end?", span,
                     hint="raise the limit with --max-depth or Interpreter(max_depth=...)")
