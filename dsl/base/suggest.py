""""Did you mean ...": the hint a misspelled name gets (a field's is in compiler.py, which knows values).

Only error paths call these, so a correct program pays nothing for them.
"""

import difflib


def closest(word, candidates):
    """The candidate most like `word`, if one is close enough to be a likely typo."""
    found = difflib.get_close_matches(word, [c for c in candidates if c != word], n=1, cutoff=0.75)
    return found[0] if found else None


# Python's constants, which dg spells in lower case
PYTHON_CONSTANTS = {"True": "true", "False": "false", "None": "none"}


# Python's array modules: dg's builtins are their functions, called without a prefix
PYTHON_MODULES = {"np", "numpy", "jnp", "jax", "lax", "math", "torch", "scipy", "linalg", "random"}
MODULE_HINT = "numpy's functions are dg's builtins, called without a module: zeros(3), not np.zeros(3)"

KEY_HINT = "rng(seed) makes a random key (split(key) splits it; key= on a distribution draws with it)"
MASK_HINT = "x[mask] keeps the entries where a mask holds; where(mask, a, b) picks entry by entry"
TO_RADIANS, TO_DEGREES = "x * pi / 180.0", "x * 180.0 / pi"

# Python builtins dg spells another way
REAL_HINT = "dg's numbers are real: it has no complex type"

PYTHON_NAMES = {
    "list": "dg has no lists: a tuple (1.0, \"a\") holds anything in order, a tensor [1.0, 2.0] numbers",
    "tuple": "a for loop builds a tuple (t = t + (x,)); tensor(t) makes a tensor of a tuple of numbers",
    "dict": "a map is written {\"key\": value}; keys(m), values(m) and items(m) read it",
    "isinstance": "type(x) names a value's type: type(1.0) == \"float\"",
    "append": "tensors do not grow in place: cat((a, [x])) is a longer tensor, a + (x,) a longer tuple",
    "pass": "an empty block is {} in dg",
    "reversed": "flip(x) reverses a tensor along its axes; t[::-1] reverses a tuple",
    "sorted": "sort(x) sorts a tensor's entries (tensor(t) makes a tensor of a tuple of numbers)",
    "map": "tree_map(f, t) applies f to each item of a tuple (each leaf of a tree); vmap(f)(xs) maps f over a "
           "tensor's rows",
    "filter": "dg has no filter: where(mask, x, y) picks entry by entry, x[mask] keeps the entries of a mask",
    "divmod": "(a // b, a % b) is the quotient and the remainder",
    # numpy's names for what dg names otherwise
    "concatenate": "dg's is cat((a, b), axis=0)",
    "hstack": "cat((a, b), axis=-1) joins along the last axis; stack((a, b)) adds a new one",
    "vstack": "cat((a, b), axis=0) joins along the first axis; stack((a, b)) adds a new one",
    "clip": "dg's is clamp(x, lo, hi)",
    "dot": "a @ b (or matmul(a, b)) is the dot product of two vectors and the matrix product; einsum the rest",
    "array": "a bracket literal [1.0, 2.0] is a tensor; tensor(t) makes one of a tuple",
    "asarray": "a bracket literal [1.0, 2.0] is a tensor; tensor(t) makes one of a tuple",
    "expit": "dg's is sigmoid(x)",
    "power": "x ** y (or pow(x, y)) raises entry by entry",
    "mod": "x % y is the remainder with the divisor's sign, as numpy's mod",
    "remainder": "x % y is the remainder with the divisor's sign, as numpy's remainder",
    "tensordot": "einsum names the axes to contract: einsum(\"ijk,jkl->il\", a, b)",
    "inner": "einsum(\"...i,...i\", a, b) sums the products over the last axis; a @ b for vectors",
    "vdot": "sum(a * b) is the dot product of two tensors' entries",
    "amax": "dg's is max(x, axis=none)",
    "amin": "dg's is min(x, axis=none)",
    "flatten": "ravel(x) (or reshape(x, -1)) lays the entries along one axis",
    "identity": "dg's is eye(n)",
    "cumulative_sum": "dg's is cumsum(x, axis=none)",
    "absolute": "dg's is abs(x)", "fabs": "dg's is abs(x)",
    "gammaln": "dg's is lgamma(x)",
    "rint": "round(x) rounds halves to even, as numpy's rint",
    "fliplr": "flip(x, axis=1)", "flipud": "flip(x, axis=0)",
    "percentile": "quantile(x, q / 100.0) (dg's q is a fraction in [0, 1])",
    "fmax": "maximum(a, b) entry by entry (a NaN in either gives NaN: where(isnan(a), b, maximum(a, b)) "
            "passes over one in a)",
    "fmin": "minimum(a, b) entry by entry (a NaN in either gives NaN: where(isnan(a), b, minimum(a, b)) "
            "passes over one in a)",
    "empty": "zeros(shape) (dg has no uninitialised tensors)", "empty_like": "zeros_like(x)",
    # numpy's functions for what dg writes as an operator
    "add": "a + b", "subtract": "a - b", "multiply": "a * b", "divide": "a / b", "true_divide": "a / b",
    "floor_divide": "a // b", "negative": "-x", "equal": "a == b", "not_equal": "a != b",
    # numpy's functions dg composes from its own
    "average": "mean(x, axis) is the plain average; sum(w * x) / sum(w) a weighted one",
    "nan_to_num": "where(isnan(x), 0.0, x) replaces NaN; clamp(x, lo, hi) bounds the infinities",
    "reciprocal": "1.0 / x",
    "trunc": "sign(x) * floor(abs(x)) rounds toward zero (astype(x, \"int64\") as ints)",
    "exp2": "2.0 ** x",
    "logspace": "10.0 ** linspace(a, b, n)",
    "deg2rad": TO_RADIANS, "radians": TO_RADIANS, "rad2deg": TO_DEGREES, "degrees": TO_DEGREES,
    "nonzero": MASK_HINT, "argwhere": MASK_HINT,
    "leaky_relu": "where(x > 0.0, x, 0.01 * x)",
    "elu": "where(x > 0.0, x, expm1(x))",
    "heaviside": "where(x > 0.0, 1.0, 0.0) (where(x == 0.0, h0, ...) for another value at 0)",
    "betaln": "lgamma(a) + lgamma(b) - lgamma(a + b)",
    "polygamma": "digamma(x) is scipy's polygamma of order 0; grad(digamma) gives the next orders",
    "ldexp": "x * 2.0 ** n",
    "ptp": "max(x, axis) - min(x, axis)",
    "gradient": "numpy's gradient is finite differences: (x[2:] - x[:-2]) / (2.0 * h) at the inner points, "
                "diff(x) / h between neighbours; grad(f) is a function's exact derivative",
    "eig": "eigh(a) for a symmetric matrix; dg has no complex numbers, which a general matrix's eigenvalues need",
    "real": REAL_HINT, "imag": REAL_HINT, "conj": REAL_HINT,
    "convolve": "of vectors a (n) and v (m): conv(reshape(a, (1, 1, n)), reshape(flip(v), (1, 1, m)), padding=m - 1)"
                "[0, 0] (padding=\"same\" for numpy's mode=\"same\", none for \"valid\")",
    "correlate": "of vectors a (n) and v (m): conv(reshape(a, (1, 1, n)), reshape(v, (1, 1, m)))[0, 0] "
                 "(numpy's mode \"valid\"; padding=m - 1 for \"full\", \"same\" for \"same\")",
    "trapz": "dg's is trapezoid(y, x=none, dx=1.0, axis=-1) (numpy 2's name)",
    "repr": "str(x) is the text print shows for a value",
    "format": 'an f-string formats a value: f"{x:.2f}"',
    "join": "+ joins two strings (a + \", \" + b); a loop joins more",
    "rot90": "flip(transpose(x), 0) turns a matrix a quarter to the left",
    "geomspace": "exp(linspace(ln(a), ln(b), n))",
    "polyfit": "lstsq(x[:, none] ** arange(deg, -1.0, -1.0), y)[0] (the highest power first, as polyval reads it)",
    "count_nonzero": "sum(x != 0.0)",
    "unique": "let s = sort(x), then s[cat(([true], diff(s) != 0.0))]",
    "copysign": "abs(a) * where(b < 0.0, -1.0, 1.0)",
    "fmod": "sign(a) * (abs(a) % abs(b)), the remainder with a's sign (x % y has y's)",
    "entr": "-xlogy(x, x)", "rel_entr": "xlogy(x, x) - xlogy(x, y)", "kl_div": "xlogy(x, x) - xlogy(x, y) - x + y",
    "xlog1py": "x * log1p(y) (where(x == 0.0, 0.0, ...) for a y of -1)",
    "matrix_rank": "sum(svd(a, compute_uv=false) > tol), tol a small multiple of the largest singular value",
    "bincount": "segment_sum(ones(n), ids, size) counts each id (weights in place of the ones weigh them)",
    "atleast_1d": "reshape(x, (-1,)) for a number, or a tensor as it is",
    "atleast_2d": "reshape(x, (1, -1)) makes a vector one row",
    "array_equal": "shape(a) == shape(b) and all(a == b)",
    # JAX's control flow and keys: dg's own statements are what jit stages as loops and branches
    "fori_loop": "a for loop is dg's: for i in range(lo, hi) { ... } (jit stages it once, as a loop)",
    "scan": "a for loop is dg's: for x in xs { ... } carries what it assigns (jit stages it once, as a "
            "loop); stack the rows it makes with traj[i] = row",
    "while_loop": "a while loop is dg's: while cond { ... } (jit stages it once, as a loop)",
    "cond": "an if statement is dg's: if c { ... } else { ... } (jit stages a branch on a traced value); "
            "where(c, a, b) picks entry by entry",
    "switch": "an if statement is dg's: if i == 0 { ... } else if i == 1 { ... }",
    "PRNGKey": KEY_HINT,
    "key": KEY_HINT,
    "take": "x[idx] reads the entries at an index tensor's positions; gather(x, idx, axis) along an axis",
}


# numpy's and PyTorch's names for parameters dg names otherwise
PARAMETER_NAMES = {"dim": "axis", "keepdim": "keepdims", "size": "shape", "min": "lo", "max": "hi",
                   "a_min": "lo", "a_max": "hi", "num": "n", "loc": "mean", "scale": "std",
                   "test_size": "fraction"}


def call_hint(name, params, args, kwargs):
    """The hint for a builtin called with numpy's or PyTorch's habits (`mean(x, dim=0)`,
    `reshape(x, 2, 3)`), or None. `params`: the names the builtin takes, in order."""
    for k in kwargs:
        right = PARAMETER_NAMES.get(k)
        if k not in params and right in params:
            return f"dg names it {right}=, as in {name}(..., {right}=...)"
    tupled = [p for p in params if p in ("shape", "axes", "reps")]
    if len(args) > len(params) and tupled:
        at = params.index(tupled[0])
        shape = tuple_text(list(args[at:])) if all(type(a) is int for a in args[at:]) else None
        if shape is not None:
            written = ", ".join(["x"] * at + [shape])
            return f"the {tupled[0]} {'are' if tupled[0] == 'axes' else 'is'} one tuple: {name}({written})"
    return None


def tuple_text(items):
    """Python's spelling of a list of whole numbers as a tuple, nested lists as nested tuples
    (`(2, 3)`, `(1,)`, `((1, 2),)`), or None where an item is not a whole number or a list is empty."""
    def text(item):
        if type(item) is list:
            if not item:
                raise ValueError(item)
            return "(" + ", ".join(text(i) for i in item) + ("," if len(item) == 1 else "") + ")"
        if type(item) is int:       # whole, and maybe past a float's range (10 ** 400)
            return str(item)
        if not float(item).is_integer():
            raise ValueError(item)
        return str(int(item))

    try:
        return text(items)
    except (TypeError, ValueError, OverflowError):
        return None


def tuple_hint(value):
    """For a shape, a window or pad widths written as a bracket literal (`zeros([2, 3])`, numpy's
    and JAX's lists), the tuple to write instead, or None: in dg a bracket literal is a tensor."""
    written = tuple_text(value.tolist()) if getattr(value, "ndim", 0) in (1, 2) else None
    return f"write it as a tuple, {written}: a bracket literal [...] is a tensor" if written else None


def module_attr_hint(module, path, called, builtins):
    """For `np.sum(x)`, `math.pi`, `np.random.normal(...)` and the like (`module` a Python module
    that is not defined, `path` the attributes read of it, the last `called` or not), the hint
    that spells the builtin dg's way, or None."""
    if module not in PYTHON_MODULES:
        return None
    attr, written = path[-1], ".".join((module, *path))
    if attr in builtins:
        if called:
            return f"dg's builtins are called without a module: {attr}(...), not {written}(...)"
        return f"{attr} is a dg builtin: write {attr}, not {written}"
    if attr in PYTHON_NAMES:
        return PYTHON_NAMES[attr]
    best = closest(attr, builtins)
    return f"{MODULE_HINT}; did you mean {best}?" if best else None


def module_hint(name):
    """The hint for `import numpy` and the like, or None."""
    return MODULE_HINT + " (no import is needed)" if name in PYTHON_MODULES else None


# numpy's element types, which dg names by strings
DTYPES = {"float64", "float32", "float16", "bfloat16", "int64", "int32", "int16", "int8", "uint8", "bool_"}


def name_hint(name, candidates):
    """"did you mean 'softmax'?" for a misspelled name, or None."""
    if name in PYTHON_CONSTANTS:
        return f"did you mean {PYTHON_CONSTANTS[name]}? (dg writes true, false and none in lower case)"
    if name in DTYPES:
        return f'element types are named by strings: dtype="{name.rstrip("_")}", astype(x, "{name.rstrip("_")}")'
    if name in PYTHON_MODULES:
        return MODULE_HINT
    if name in PYTHON_NAMES:
        return PYTHON_NAMES[name]
    best = closest(name, candidates)
    return f"did you mean '{best}'?" if best else None
