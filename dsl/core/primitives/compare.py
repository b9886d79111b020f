"""Operations without derivatives: comparisons, masks, floor, sign, class indices, and
stop_gradient's identity.

They are recorded only on traces that stage every operation (jit, vmap), where
their results decide control flow or select values; under grad and jvp they
are computed on the plain values (tape.nondiff), so their results are constants
there, as in JAX. Their batching is elementwise (or an axis moved past the batch).
"""

from .. import ops as O
from ..format_spec import fstring_text
from ..ops.compare import ORDER_OPS, order
from ..ops.finite import finite
from ..ops.nn import class_indices
from ..printing import show
from ..tape import nondiff
from .arith import ELEMENTWISE
from .registry import define

for _op, _name in ORDER_OPS.items():
    define(_name, (lambda op: lambda a, b: order(op, a, b))(_op), differentiable=False, batch=ELEMENTWISE,
           emit=f"({{0}} {_op} {{1}})")
define("Equal", O.eq, differentiable=False, batch=ELEMENTWISE, emit="({0} == {1})")
define("NotEqual", O.ne, differentiable=False, batch=ELEMENTWISE, emit="({0} != {1})")
# on numbers the templates give a bool whatever the operands (as numpy's do), and NaN counts as true
define("LogicalAnd", O.logical_and, differentiable=False, batch=ELEMENTWISE,
       emit={"float": "({0} != 0 and {1} != 0)", "array": "np.logical_and({0}, {1})", "bools": True})
define("LogicalOr", O.logical_or, differentiable=False, batch=ELEMENTWISE,
       emit={"float": "({0} != 0 or {1} != 0)", "array": "np.logical_or({0}, {1})", "bools": True})
define("LogicalNot", O.logical_not, differentiable=False, batch=ELEMENTWISE,
       emit={"float": "({0} == 0)", "array": "np.logical_not({0})", "bools": True})
define("Sign", O.sign, differentiable=False, batch=ELEMENTWISE)
define("Floor", O.floor, differentiable=False, batch=ELEMENTWISE)
define("Ceil", O.ceil, differentiable=False, batch=ELEMENTWISE)
define("Round", O.round_, differentiable=False, batch=ELEMENTWISE)
define("IsFinite", O.isfinite, differentiable=False, batch=ELEMENTWISE,
       emit={"float": "({0} - {0} == 0.0)", "array": "np.isfinite({0})", "bools": True})
define("AllFinite", finite, differentiable=False,      # batched: one bool per example
       batch=lambda ns, args, batched, kw: nondiff("AllFinite", args, {"rows": True}), keeps_nan=True)
define("Any", lambda a, rows=False: O.any_(a, rows), differentiable=False,    # batched: one bool per example
       batch=lambda ns, args, batched, kw: nondiff("Any", args, {"rows": True}))
define("ClassIndices", class_indices, differentiable=False, batch=ELEMENTWISE, can_fail=True)
define("FloorDiv", O.floordiv, differentiable=False, batch=ELEMENTWISE, can_fail=True)
# stop_gradient of a value jit or vmap stages: the value itself, so that a derivative later taken
# through the recording (grad of jit, a rolled loop's pullback) stops there (transform/transforms.py);
# batched, it strips the boxes of a derivative taken through vmap (grad of vmap) as unbatched
define("StopGradient", lambda x: x, differentiable=False, emit="{0}",
       batch=lambda ns, args, batched, kw: nondiff("StopGradient", args))


# text of staged values, made when the program runs (no batching: under vmap, per example)
def _fstring(*values, parts=None, span=None):
    """An f-string's text."""
    return fstring_text(parts, values, span)


def _str(x):
    """str(x)."""
    return show(x)


define("FString", _fstring, differentiable=False)
define("Str", _str, differentiable=False)
