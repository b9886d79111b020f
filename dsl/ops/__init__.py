"""Every primitive operation of dg, in one namespace.

A primitive computes with numpy (or Python numbers on the scalar fast path)
and, when an argument is a recorded Box, records one tape node. The gradient
rules (dsl/primitives/) run on these same functions where a value is boxed (the
TRACED namespace), so that their own work is recorded at higher order.
"""

from .arith import add, sub, mul, div, floordiv, mod, pow, neg, pos, matmul, matmul_kernel, BINARY, MAX_SEQUENCE
from .compare import (order, eq, ne, values_equal, truth, not_, COMPARE, logical_and, logical_or, logical_not,
                      any_, isfinite)
from .elementwise import (exp, ln, log2, sin, cos, sqrt, abs_, tanh, sigmoid, relu, silu, gelu,
                          erf, sign, floor, ceil, round_, log1p, expm1, softplus, nz, nz_kept, maximum, minimum, where, clamp,
                          tan, asin, acos, atan, sinh, cosh, asinh, acosh, atanh, log_sigmoid, logit, atan2,
                          logaddexp)
from .special import erfinv, lgamma, digamma, trigamma, xlogy
from .reduce import unbroadcast, sum_, mean, max_, min_, logsumexp, keep_axes, count, var, prod, cumsum, cumprod
from .sorting import argmax, argmin, argsort, sort, take_along, put_along
from .linalg import einsum
from .shape import (reshape, transpose, swap_last, cat, stack, broadcast_to,
                    make_key, index, gather, index_add, set_index, row, row_add)
from .nn import softmax, log_softmax, cross_entropy, layer_norm, batch_norm, ssm_scan
from .slots import unpack, struct_slot, map_slot
from .structs import field, set_field, item, set_item
from .core import check_size, to_tensor, fmt_shape, shape_of, to_float, brief_int, float_type
from .dtypes import astype, cast, dtype_arg, dtype_name
