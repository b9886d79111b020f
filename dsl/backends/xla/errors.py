"""What the XLA backend raises while lowering a program it cannot run as numpy does."""


class NotLowerable(Exception):
    """A program (or a step of it) that XLA does not run as dg's numpy backend does: the reason."""
