"""Limits that stop runaway programs with a `limit` error instead of a crash or a hang:
call depth, an optional step budget and an optional wall-clock timeout."""

import sys
import time

from .errors import error

DEFAULT_MAX_DEPTH = 1000
# Python frames one dg call may use (call site, function body, statements, expressions).
FRAMES_PER_CALL = 30


class Limits:
    """Counters checked by function calls and loop iterations."""

    __slots__ = ("max_depth", "depth", "calls", "steps", "max_steps", "timeout", "deadline")

    def __init__(self, max_depth=DEFAULT_MAX_DEPTH, max_steps=None, timeout=None):
        self.max_depth = max_depth
        self.depth = 0
        self.calls = 0
        self.steps = 0
        self.max_steps = max_steps
        self.timeout = timeout
        self.deadline = None
        # Python's recursion limit is global to the process: raise it only as far as the default
        # depth needs (safe on any thread's stack); a run raises it further while it lasts.
        need = min(max_depth, DEFAULT_MAX_DEPTH) * FRAMES_PER_CALL + 2000
        if sys.getrecursionlimit() < need:
            sys.setrecursionlimit(need)

    def recursion_limit(self):
        """The Python recursion limit a run with this call depth needs."""
        return self.max_depth * FRAMES_PER_CALL + 2000

    def start(self):
        """A run begins: reset the step count and arm the timeout."""
        self.depth = 0
        self.steps = 0
        self.deadline = time.monotonic() + self.timeout if self.timeout else None

    def tick(self, n, span=None):
        """Count n loop iterations (or a batch of calls); stop if a budget is spent (error at `span`)."""
        self.steps += n if n else 1024
        if self.max_steps is not None and self.steps > self.max_steps:
            raise error("limit", f"the program ran more than {self.max_steps:,} steps", span,
                        hint="raise the budget with --max-steps or Interpreter(max_steps=...)")
        if self.deadline is not None and time.monotonic() > self.deadline:
            raise error("limit", f"the program ran longer than {self.timeout:g} second{'' if self.timeout == 1 else 's'}", span,
                        hint="raise it with --timeout or Interpreter(timeout=...)")

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
