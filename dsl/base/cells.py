"""Where a variable lives when a frame slot will not do: a Cell (a variable a closure captured,
or a module-level name), and UNBOUND, its value before its `let` has run. The resolver makes the
module's Cells as it binds names, before anything runs."""


class Cell:
    """A variable captured by a closure (or a module-level name)."""

    __slots__ = ("v",)

    def __init__(self, v=None):
        self.v = v


class _Unbound:
    """The value of a declared name before its `let` has run."""

    __slots__ = ()

    def __repr__(self):
        return "<unbound>"


UNBOUND = _Unbound()
