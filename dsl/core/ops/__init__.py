"""Every primitive operation of dg, in one namespace.

A primitive computes with numpy (or Python numbers on the scalar fast path)
and, when an argument is a recorded Box, records one tape node. The gradient
rules (dsl/core/primitives/) run on these same functions where a value is boxed (the
TRACED namespace), so that their own work is recorded at higher order.
"""

from .arith import (BINARY, MAX_SEQUENCE, add, div, floordiv, matmul, matmul_kernel, mod, mul, neg, pos, pow,
                    sub)
from .compare import (COMPARE, any_, contains, eq, isfinite, logical_and, logical_not, logical_or, ne, not_, order,
                      truth, values_equal)
from .contract import nz_matmul
from .core import brief_int, check_size, float_type, fmt_shape, shape_of, to_float, to_tensor
from .dtypes import astype, cast, dtype_arg, dtype_name
from .elementwise import (abs_, acos, acosh, asin, asinh, atan, atan2, atanh, cbrt, ceil, clamp, cos, cosh, erf,
                          erfc, exp, expm1, floor, gelu, hypot, keep_where, ln, log1p, log2, log10, log_sigmoid,
                          logaddexp, logit, maximum, minimum, nz, nz_kept, relu, round_, sigmoid, sign, silu, sin,
                          sinh, softplus, sqrt, tan, tanh, where)
from .linalg import einsum
from .nn import batch_norm, cross_entropy, layer_norm, log_softmax, softmax, ssm_scan
from .reduce import (check_keepdims, count, cumprod, cumsum, keep_axes, logsumexp, max_, mean, min_, prod,
                     sequence_operand, sum_, unbroadcast, var)
from .shape import (broadcast_to, cat, index, index_add, make_key, moveaxis, reshape, row, row_add, rows,
                    rows_add, rows_plain, set_index, set_row, set_row_plain, set_rows, set_rows_plain, stack,
                    swap_last, transpose)
from .slots import map_slot, struct_slot, unpack
from .sorting import argmax, argmin, argsort, put_along, searchsorted, sort, take_along
from .take import (gather, last_writer, last_writer_plain, put, staged_index, take, take_add, take_add_plain, take_at,
                   take_plain)
from .incomplete_gamma import gammainc, gammainc_da, gammaincc
from .special import digamma, erfcinv, erfinv, lgamma, polygamma, trigamma, xlogy
from .structs import field, item, set_field, set_item
