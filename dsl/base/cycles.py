"""Holding Python's cycle collector while dg builds many objects that have no cycles."""

import gc


class gc_paused:
    """`with gc_paused():` holds the cycle collector while a syntax tree, a tape or a staged
    program is built.

    These make hundreds of thousands of objects that all survive until the work is done,
    so the collector keeps scanning them for cycles they do not have: pausing it makes
    parsing about 1.4x and a scalar gradient about 1.15x faster. Cycles made meanwhile are
    collected later. (A class, not a contextlib generator: it is entered once per gradient.)
    """

    __slots__ = ("paused",)

    def __enter__(self):
        self.paused = gc.isenabled()
        if self.paused:
            gc.disable()
        return self

    def __exit__(self, *exc):
        if self.paused:
            gc.enable()
        return False


def give_back_memory():
    """After a computation was stopped part way (Ctrl-C in the REPL or a notebook): collect what
    it left, and hand the freed memory back to the system. glibc keeps freed small blocks (a
    tape's many small tensors) for reuse, so the process would stay its peak size."""
    gc.collect()
    try:
        import ctypes       # start-up: only after a computation was stopped part way
        libc = ctypes.CDLL(None)
        trim = getattr(libc, "malloc_trim", None)
    except (OSError, AttributeError):
        return
    if trim is not None:
        trim(0)
