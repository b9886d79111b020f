"""shard(f, in_axes): f compiled by XLA and run data-parallel over every device XLA sees
(docs/xla.md).

shard is jit with the XLA backend whose calls place each tensor argument split along its
in_axes entry (as vmap's: an int or none per argument, or a tree of them) over a mesh of all
devices, and the others whole on each device. The program is the one jit stages of f, not a
per-example one: XLA's partitioner divides the work and adds the communication a reduction
over the split axis needs, so the results are f's on the whole batch, as unsharded (to
rounding: a sum is added in pieces). A recording XLA cannot run runs on numpy, unsplit.
"""

from ...backends.xla import runtime
from ...core.stage import is_staged_leaf
from ...core.tape import peek
from ...errors import error
from ..transformed import Transformed, fname
from ..vmap import _in_axes, _leaves_and_axes
from .jit import Jitted


class Sharded:
    """The state of one shard(f): its Jitted, compiling for XLA, and the in_axes."""

    def __init__(self, f, in_axes, interp, explain):
        self.f = f
        self.in_axes = in_axes
        self.jitted = Jitted(f, interp, explain, "xla")
        self.jitted.placement = self.placement

    def __call__(self, *args, **kwargs):
        return self.jitted(*args, **kwargs)

    def placement(self, args, kwargs):
        """Per staged leaf of a call (the values jit's compiled code takes), the axis it is
        split along, or None (whole on every device)."""
        who = f"shard({fname(self.f)})"
        if kwargs:
            raise error("type", f"{who} takes its arguments by position (in_axes names them in order)")
        leaves, _, axes = _leaves_and_axes(args, _in_axes(self.in_axes, args, who), who)
        n = runtime.mesh().size
        split = []
        for leaf, axis in zip(leaves, axes):
            v = peek(leaf)
            if not (is_staged_leaf(v) or type(v) is int):
                continue
            if axis is not None and v.shape[axis] % n:
                raise error("shape", f"{who}: axis {axis} of length {v.shape[axis]} does not split evenly over "
                                     f"{n} devices",
                            hint="give a batch whose length is a multiple of the devices' number")
            split.append(axis)
        return split


def shard(f, in_axes=0, interp=None, explain=False):
    """shard(f, in_axes=0): f compiled by XLA, its calls split over every device (see the module
    docstring)."""
    runtime.load()
    return Transformed(f"shard({fname(f)})", Sharded(f, in_axes, interp, explain), (f,))


def devices():
    """The devices XLA sees, as "platform:id" strings (CPU devices unless JAX has a GPU build)."""
    return tuple(f"{d.platform}:{d.id}" for d in runtime.mesh().devices.flat)


__all__ = ["devices", "shard"]
