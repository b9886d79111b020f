"""jit: compiled recordings of dg functions (jit.py: the transformation; codegen.py: the code;
kernels.py: what the code calls)."""

from .jit import jit

__all__ = ["jit"]
