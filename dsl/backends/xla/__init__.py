"""The XLA backend: staged programs compiled by XLA through JAX (an optional extra).

runtime.py loads JAX; rules.py is the table of lowering rules (and of the primitives that
stay on numpy, with their reasons); lower.py turns a staged program into a function over JAX
values; code.py compiles it and runs it as jit's compiled code. dg's derivatives are in the
staged programs already: JAX never differentiates.
"""

from .code import XlaCode
from .runtime import available, load

__all__ = ["XlaCode", "available", "load"]
