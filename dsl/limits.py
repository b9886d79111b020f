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
        need = max_depth * FRAMES_PER_CALL + 2000
        if sys.getrecursionlimit() < need:
            sys.setrecursionlimit(need)

    def start(self):
        """A run begins: reset the step count and arm the timeout."""
        self.depth = 0
        self.steps = 0
        self.deadline = time.monotonic() + self.timeout if self.timeout else None

    def tick(self, n):
        """Count n loop iterations (or a batch of calls); stop if a budget is spent."""
        self.steps += n if n else 1024
        if self.max_steps is not None and self.steps > self.max_steps:
            raise error("limit", f"the program ran more than {self.max_steps:,} steps",
                        hint="raise the budget with --max-steps or Interpreter(max_steps=...)")
        if self.deadline is not None and time.monotonic() > self.deadline:
            raise error("limit", f"the program ran longer than {self.timeout:g} seconds",
                        hint="raise it with --timeout or Interpreter(timeout=...)")

    def too_deep(self, span):
        """The error for recursion past the depth limit."""
        return error("limit", f"too many nested calls (more than {self.max_depth:,}); "
                              "is there a recursion without an end?", span,
                     hint="raise the limit with --max-depth or Interpreter(max_depth=...)")
