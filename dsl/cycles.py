"""Holding Python's cycle collector while dg builds many objects that have no cycles."""

import contextlib
import gc


@contextlib.contextmanager
def gc_paused():
    """Hold the cycle collector while a syntax tree, a tape or a staged program is built.

    These make hundreds of thousands of objects that all survive until the work is
    done, so the collector keeps scanning them for cycles they do not have: pausing it
    makes parsing about 1.4x and a scalar gradient about 1.15x faster. Cycles made
    meanwhile are collected later.
    """
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()
