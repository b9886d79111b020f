"""Temporary elision: `x @ w + b` writes the sum into the product's memory.

numpy itself skips allocating a result when an operand is a temporary that
nothing else refers to. dg cannot rely on that (its own frames hold the
operands), so the compiled `+ - * /` sites ask `reuse_left` first: when
the left operand is a fresh tensor nobody else can see, the result is
computed into it. Besides an allocation this saves memory a training step
would otherwise keep until backward.

On a tape the temporary is a Box, whose value the tape still links to; the
reuse is safe only when no gradient rule will read that value again: the
box's own rule must not read its output (`reads_output`, which the primitive
registry derives from the rule's code), and the new node's rule must read
only the operand's shape (Add, Sub). `sys.getrefcount` proves that nothing
but the caller's local and the trace's node list hold the box, and nothing
but the box holds its array (no other node saved it, no view of it exists).
"""

import sys

import numpy as np

from ..primitives.registry import reads_output
from ..tape import Box, REFCOUNTS_EXACT, REVERSE, record2
from .core import FLOAT

ENABLED = REFCOUNTS_EXACT     # on Pythons whose counts prove nothing, operators allocate as before

# Below numpy's own threshold for eliding temporaries (256 KB) a fresh result costs less than the
# checks that prove the operand may be overwritten: an RNN's 16 x 32 states ran 10% slower with them.
MIN_SIZE = 256 * 1024 // 8

# The ufunc of each operator that may write into its left operand; on a tape only
# + and - (their rules read operand shapes, where * and / read operand values).
UFUNCS = {"+": np.add, "-": np.subtract, "*": np.multiply, "/": np.true_divide}
ON_TAPE = {"+": "Add", "-": "Sub"}


def _fits(av, b):
    """Whether `av op b` can be written into `av`: float64 result of av's own shape."""
    if type(av) is not np.ndarray or av.dtype != FLOAT or av.base is not None or not av.flags.writeable:
        return False
    tb = type(b)
    if tb is float or (tb is int and -2 ** 53 <= b <= 2 ** 53):
        return True
    if tb is not np.ndarray or b.dtype.kind not in "fib" or b.ndim > av.ndim:
        return False
    shape = av.shape
    return all(n == 1 or n == m for n, m in zip(b.shape[::-1], shape[::-1]))


def _into(ufunc):
    """ufunc(av, bv) computed into av, with the (av, bv, span) signature record2 calls."""
    return lambda av, bv, span: ufunc(av, bv, out=av)


INTO = {op: _into(UFUNCS[op]) for op in ON_TAPE}


def _on_live_tape(box):
    """Whether `box` is among the last nodes of its trace's live node list (so that list holds it)."""
    nodes = box.trace.nodes
    n = len(nodes)
    for i in range(n - 1, max(n - 9, -1), -1):
        if nodes[i] is box:
            return True
    return False


def reuse_left(op, a, b, span):
    """`a op b` written into a's memory, or None to take the ordinary path.

    `a` is the value of an operand expression held in one local of the
    compiled operator (dsl/runtime/compiler.py); the reference counts below are
    that local, this parameter and getrefcount's own argument.
    """
    if not ENABLED:
        return None
    if type(a) is np.ndarray:
        if _fits(a, b) and sys.getrefcount(a) == 3:
            return UFUNCS[op](a, b, out=a)
        return None
    opname = ON_TAPE.get(op)
    if opname is None or a.trace.kind is not REVERSE or reads_output(a.op) or not _on_live_tape(a):
        return None
    if sys.getrefcount(a) != 4:     # one more: the trace's node list
        return None
    tb = type(b)
    if tb is Box:
        if b.trace.level > a.trace.level:
            return None
        bv = b.v if b.trace is a.trace else b
    else:
        bv = b
    av = a.v
    # 3 = the box's .v, the local `av` and getrefcount's argument: no other node saved it
    if not _fits(av, bv) or sys.getrefcount(av) != 3:
        return None
    av = bv = None
    return record2(opname, a, b, span, INTO[op])
