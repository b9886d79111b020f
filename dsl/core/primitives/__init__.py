"""Every primitive of dg, declared once with its rules (see registry.py for the recipe).

Importing this package defines them: each `define` fills the registry and the tables
the transformations read (registry._install): the kernels `record` calls (tape.IMPLS),
the uniform reverse and forward rules (tape.PULLBACKS, tape.PUSHFORWARDS), the float
fast path of elementwise primitives (tape.FLOAT_PULLBACKS), the plain-array fast path
(tape.PLAIN_PULLBACKS) and the batching rules (tape.BATCHES). The namespaces rules run
in, and the loud error for a missing rule, are bound here.
"""

from .. import tape
from . import (arith, compare, control, decompositions, dtypes, elementwise, expm, incomplete_gamma, linalg, loops, matmul, matrix, nn,
               order, random, reduce, scan, shape, structs, take, windows)
from .namespaces import EAGER, TRACED
from .registry import rule_of

tape.EAGER, tape.TRACED = EAGER, TRACED
tape.RULE_OF = rule_of
