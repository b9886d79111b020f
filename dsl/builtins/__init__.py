"""The names a dg program sees without importing anything (SPEC sections 5, 6 and 9)."""

from . import core, grads, tensors, trees
from . import data, files, progress


def make_builtins(interp):
    """Every builtin, bound to `interp` where it needs the interpreter's state."""
    names = {}
    names.update(core.make(interp))
    names.update(tensors.make(interp))
    names.update(trees.BUILTINS)
    names.update(grads.make(interp))
    names.update(data.make(interp), **files.BUILTINS, **progress.BUILTINS)
    return names
