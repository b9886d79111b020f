"""A fast path that keeps missing is not tried for a while: jit's recordings past their limit
(jit.py), compiled code whose results the exact code keeps having to give (codegen.run_code)."""


class Backoff:
    """Counts a fast path's misses in a row; from the `after`-th, the next `skip_for` calls go
    straight to the slow path, and then the fast one is tried again. A hit starts the count
    again."""

    __slots__ = ("after", "skip_for", "misses", "skip")

    def __init__(self, after, skip_for):
        self.after = after
        self.skip_for = skip_for
        self.misses = 0         # misses in a row
        self.skip = 0           # calls left that go straight to the slow path

    def skipping(self):
        """Whether this call goes straight to the slow path (counted)."""
        if self.skip:
            self.skip -= 1
            return True
        return False

    def hit(self):
        """The fast path gave the result."""
        self.misses = 0

    def miss(self):
        """The fast path missed: how many calls from the next one on skip it (0: none)."""
        self.misses += 1
        if self.misses >= self.after:
            self.skip = self.skip_for
        return self.skip
