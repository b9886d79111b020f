"""The documentation of every builtin, as a program sees it: `help(name)`, the REPL's `:doc`,
the notebook kernel's inspector, the language server's hover and docs/reference.md (made from
these by `python -m dsl.reference`) all read it; `make_builtins` makes each entry the builtin's
docstring (as numpy's _add_newdocs). Each entry: the signature and its meaning; a line saying
whether and in what it is differentiable; examples as `>>> dg expression` and what it shows,
which tests/docs/test_reference.py runs. Families of builtins keep their entries in docs_*.py.
"""

from .docs_conv import DOCS as CONV_DOCS, NAMES as CONV_NAMES
from .docs_linalg import DOCS as LINALG_DOCS, NAMES as LINALG_NAMES
from .docs_math import ARRAYS, DOCS as MATH_DOCS, FUNCTIONS as MATH_FUNCTIONS, NAMES as NUMBER_NAMES
from .docs_random import DOCS as RANDOM_DOCS, NAMES as RANDOM_NAMES
from .docs_transforms import DOCS as TRANSFORM_DOCS, NAMES as TRANSFORM_NAMES
# Section of the reference each builtin belongs to, in the order they are listed.
SECTIONS = [
    ("Creating tensors", ["tensor", "zeros", "ones", "full", "eye", "arange", "linspace", "zeros_like",
                          "ones_like", "rand", "randn", "seed"]),
    ("Element types", ["dtype", "astype"]),
    ("Shapes and indexing", ["shape", "ndim", "size", "reshape", "transpose", "cat", "stack", "gather",
                             "where", "clamp"]),
    ("Constants", NUMBER_NAMES),
    ("Elementwise math", ["neg", "exp", "ln", "log", "log2", "log10", "log1p", "expm1", "sin", "cos", "sqrt", "abs",
                          "pow", "sign", "floor", "ceil", "round", "erf", "erfc", "maximum", "minimum"] + MATH_FUNCTIONS),
    ("Activations and losses", ["sigmoid", "softplus", "relu", "tanh", "silu", "gelu", "softmax", "log_softmax",
                                "logsumexp", "cross_entropy", "layer_norm", "batch_norm"]),
    ("Reductions and linear algebra", ["sum", "mean", "max", "min", "prod", "var", "std", "norm", "cumsum",
                                       "argmax", "argmin", "sort", "argsort", "matmul", "einsum",
                                       "ssm_scan"] + LINALG_NAMES),
    ("Convolution, pooling and padding", CONV_NAMES),
    ("Random numbers", RANDOM_NAMES),
    ("Differentiation and other transformations", TRANSFORM_NAMES),
    ("Array functions", ARRAYS),
    ("Trees", ["tree_map", "tree_leaves", "global_norm", "clip_by_global_norm"]),
    ("Data, files and runs", ["load_csv", "batches", "one_hot", "train_test_split", "save", "load",
                              "progress", "plot", "can_plot"]),
    ("General", ["print", "help", "str", "int", "float", "bool", "type", "len", "range", "enumerate", "zip",
                 "keys", "values", "items", "has", "get", "remove", "assert", "error", "time"]),
]

_UNARY = "Differentiable: yes."

DOCS = {
    # ---------------------------------------------------------------- creating tensors
    "tensor": """tensor(x, dtype=none): a float tensor from a number, a tensor, or nested tuples of them
(with dtype, a tensor of that element type); a range gives its values, as numpy's array(range(3)).
Differentiable: yes, in the numbers and tensors it is made of.
>>> tensor(((1, 2), (3, 4)))
[[1.0, 2.0], [3.0, 4.0]]""",
    "zeros": """zeros(shape, dtype=none): a tensor of zeros; a shape is an int or a tuple of ints. The
functions that make tensors take dtype= ("float32", "int64", ...; float64 without it).
Differentiable: no (it has no differentiable input).
>>> zeros((2, 3))
[[0.0, 0.0, 0.0], [0.0, 0.0, 0.0]]""",
    "ones": """ones(shape, dtype=none): a tensor of ones.
Differentiable: no.
>>> ones(3)
[1.0, 1.0, 1.0]""",
    "full": """full(shape, v, dtype=none): a tensor with every entry v.
Differentiable: yes, in v.
>>> full((2,), 7.5)
[7.5, 7.5]""",
    "eye": """eye(n, dtype=none): the n-by-n identity matrix.
Differentiable: no.
>>> eye(2)
[[1.0, 0.0], [0.0, 1.0]]""",
    "arange": """arange(stop), arange(start, stop), arange(start, stop, step): evenly spaced values in
[start, stop), as numpy's arange (floats; dtype="int64" for ints).
Differentiable: no.
>>> arange(4)
[0.0, 1.0, 2.0, 3.0]
>>> arange(1, 2, 0.25)
[1.0, 1.25, 1.5, 1.75]""",
    "linspace": """linspace(a, b, n, dtype=none): n evenly spaced numbers from a to b, both included.
Differentiable: yes, in a and b.
>>> linspace(0.0, 1.0, 5)
[0.0, 0.25, 0.5, 0.75, 1.0]""",
    "zeros_like": """zeros_like(x, dtype=none): zeros with x's shape and float type (a float for a number).
Differentiable: no.
>>> zeros_like([1.0, 2.0])
[0.0, 0.0]""",
    "ones_like": """ones_like(x, dtype=none): ones with x's shape and float type.
Differentiable: no.
>>> ones_like([[1.0], [2.0]])
[[1.0], [1.0]]""",
    "rand": """rand(shape, dtype=none): uniform random numbers in [0, 1), from the interpreter's seeded generator.
Differentiable: no.
>>> shape(rand((2, 3)))
(2, 3)""",
    "randn": """randn(shape, dtype=none): standard normal random numbers, from the interpreter's seeded generator.
Differentiable: no.
>>> shape(randn(5))
(5,)""",
    "seed": """seed(n): restart the random generator at n, so that a run repeats exactly (the same
numbers on every machine).
Differentiable: no.
>>> seed(1) == none
true""",
    # ---------------------------------------------------------------- element types
    "dtype": '''dtype(x): the name of x's element type: "float64", "float32", "float16", "int64", "int32"
or "bool" for a tensor; "float64", "int64" and "bool" for a float, an int and a bool.
Differentiable: no.
>>> dtype(zeros(3, dtype="float32"))
"float32"
>>> dtype(argmax([1.0, 3.0]))
"int64"''',
    "astype": '''astype(x, dtype): x as a tensor of the element type dtype names ("float16", "float32",
"float64", "int32", "int64" or "bool"), numpy's cast: floats to ints round toward zero, and a float
with no value of the int type (NaN, an infinity, past its range) is an error, where numpy's answer
depends on the machine and XLA's saturates. A tensor's
type spreads by numpy 2's promotion (float32 with float64 is float64, a number takes the tensor's
type); literals and constructors give float64 unless told otherwise.
Differentiable: yes, between float types (the gradient comes back in x's type); a cast to ints or
bools passes no gradient.
>>> astype([1.7, -1.7], "int64")
[1, -1]
>>> dtype(astype([1.0], "float32") * 2.0)
"float32"''',
    # ---------------------------------------------------------------- shapes and indexing
    "shape": """shape(x): the shape of a tensor as a tuple of ints (() for a number).
Differentiable: no.
>>> shape(zeros((2, 3)))
(2, 3)""",
    "ndim": """ndim(x): the number of axes (0 for a number).
Differentiable: no.
>>> ndim(zeros((2, 3)))
2""",
    "size": """size(x): the number of elements (1 for a number).
Differentiable: no.
>>> size(zeros((2, 3)))
6""",
    "reshape": """reshape(x, shape): x's elements in a new shape; one entry of shape may be -1.
Differentiable: yes, in x.
>>> reshape(arange(6), (2, -1))
[[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]]""",
    "transpose": """transpose(x, axes=none): x with its axes reversed, or permuted as axes says.
Differentiable: yes, in x.
>>> transpose([[1.0, 2.0], [3.0, 4.0]])
[[1.0, 3.0], [2.0, 4.0]]""",
    "cat": """cat(tensors, axis=0): the tensors (a tuple) joined along an existing axis.
Differentiable: yes, in every tensor.
>>> cat(([1.0], [2.0, 3.0]))
[1.0, 2.0, 3.0]""",
    "stack": """stack(tensors, axis=0): numbers or same-shape tensors (a tuple) joined along a new axis.
Differentiable: yes, in every element.
>>> stack(([1.0, 2.0], [3.0, 4.0]))
[[1.0, 2.0], [3.0, 4.0]]""",
    "gather": """gather(x, idx, axis=0): the slices of x at the int-valued positions idx along an axis
(x[idx] for axis 0).
Differentiable: yes, in x (repeated positions add up).
>>> gather([10.0, 20.0, 30.0], [2.0, 0.0])
[30.0, 10.0]""",
    "where": """where(c, a, b): a where the condition c is true, else b, entry by entry (broadcasting).
Differentiable: yes, in a and b (not in c).
>>> where([true, false], 1.0, [5.0, 6.0])
[1.0, 6.0]""",
    "clamp": """clamp(x, lo=none, hi=none): x limited to [lo, hi]; either bound may be none.
Differentiable: yes: the gradient goes to x where lo <= x <= hi, else to the bound that was taken.
>>> clamp([-2.0, 0.5, 3.0], -1.0, 1.0)
[-1.0, 0.5, 1.0]""",
    # ---------------------------------------------------------------- elementwise math
    "neg": """neg(x): -x.
Differentiable: yes.
>>> neg([1.0, -2.0])
[-1.0, 2.0]""",
    "exp": """exp(x): e to the power x, entry by entry.
Differentiable: yes.
>>> exp(0.0)
1.0""",
    "ln": """ln(x): the natural logarithm (ln(0) is -inf, negative numbers give nan).
Differentiable: yes.
>>> ln(1.0)
0.0""",
    "log": """log(x): the natural logarithm, the same as ln(x).
Differentiable: yes.
>>> log(exp(2.0))
2.0""",
    "log2": """log2(x): the base-2 logarithm.
Differentiable: yes.
>>> log2(8.0)
3.0""",
    "log10": """log10(x): the base-10 logarithm.
Differentiable: yes.
>>> log10(1000.0)
3.0""",
    "log1p": """log1p(x): ln(1 + x), accurate for small x.
Differentiable: yes.
>>> log1p(0.0)
0.0""",
    "expm1": """expm1(x): exp(x) - 1, accurate for small x.
Differentiable: yes.
>>> expm1(0.0)
0.0""",
    "sin": """sin(x): the sine (x in radians).
Differentiable: yes.
>>> sin(0.0)
0.0""",
    "cos": """cos(x): the cosine (x in radians).
Differentiable: yes.
>>> cos(0.0)
1.0""",
    "sqrt": """sqrt(x): the square root (negative numbers give nan).
Differentiable: yes (infinite at 0; a zero cotangent there gives 0, not nan).
>>> sqrt([4.0, 9.0])
[2.0, 3.0]""",
    "abs": """abs(x): the absolute value.
Differentiable: yes; abs'(0) is 0.
>>> abs([-1.5, 2.0])
[1.5, 2.0]""",
    "pow": """pow(x, y): x ** y, broadcasting; ints stay ints for a non-negative int exponent. An
int number to a negative int power is a float (2 ** -1 is 0.5, as Python's); an int tensor
to one is an error, as numpy's (its result type cannot depend on the exponent's values).
Differentiable: yes, in x and y; d/dy x**y at x = 0 is 0.
>>> pow(2.0, 3.0)
8.0""",
    "sign": """sign(x): -1.0, 0.0 or 1.0 by the sign of x (nan for nan).
Differentiable: no (its derivative is zero wherever it exists).
>>> sign([-3.0, 0.0, 2.0])
[-1.0, 0.0, 1.0]""",
    "floor": """floor(x): the largest whole number not above x (a float).
Differentiable: no.
>>> floor([1.5, -1.5])
[1.0, -2.0]""",
    "ceil": """ceil(x): the smallest whole number not below x (a float).
Differentiable: no.
>>> ceil([1.5, -1.5])
[2.0, -1.0]""",
    "round": """round(x, decimals=0): x rounded to the nearest whole number, halves to even (numpy's
rule); with decimals, to that many digits after the point (before it, where negative), as numpy's
round computes it: x times 10^decimals rounded, divided back (so round(2.675, 2) is numpy's 2.68,
where Python's correctly rounded round gives 2.67).
Differentiable: no (its gradient is zero).
>>> round([0.5, 1.5, 2.6])
[0.0, 2.0, 3.0]
>>> round(3.14159, 2)
3.14""",
    "erf": """erf(x): the error function.
Differentiable: yes.
>>> erf(0.0)
0.0""",
    "erfc": """erfc(x): the complementary error function, 1 - erf(x), exact where erf(x) is near 1 (a normal
tail: 0.5 * erfc(z / sqrt(2)) is the probability beyond z).
Differentiable: yes.
>>> erfc(10.0) > 0.0
true""",
    "maximum": """maximum(a, b): the larger of a and b, entry by entry (broadcasting).
Differentiable: yes, in a and b; ties share the gradient equally.
>>> maximum([1.0, 5.0], 3.0)
[3.0, 5.0]""",
    "minimum": """minimum(a, b): the smaller of a and b, entry by entry (broadcasting).
Differentiable: yes, in a and b; ties share the gradient equally.
>>> minimum([1.0, 5.0], 3.0)
[1.0, 3.0]""",
    # ---------------------------------------------------------------- activations and losses
    "sigmoid": """sigmoid(x): 1 / (1 + exp(-x)), computed stably for large |x|.
Differentiable: yes.
>>> sigmoid(0.0)
0.5""",
    "softplus": """softplus(x): ln(1 + exp(x)), computed stably for large |x| (numpy's logaddexp(0, x)).
Differentiable: yes, to every order; its derivative is sigmoid(x).
>>> softplus(0.0)
0.6931471805599453""",
    "relu": """relu(x): max(x, 0).
Differentiable: yes; relu'(0) is 0.
>>> relu([-1.0, 2.0])
[0.0, 2.0]""",
    "tanh": """tanh(x): the hyperbolic tangent.
Differentiable: yes.
>>> tanh(0.0)
0.0""",
    "silu": """silu(x): x * sigmoid(x).
Differentiable: yes.
>>> silu(0.0)
0.0""",
    "gelu": """gelu(x): x * Phi(x), Phi the standard normal CDF (the exact erf form, not tanh's
approximation): (1 + erf(x / sqrt(2))) / 2, below x = -1 erfc(-x / sqrt(2)) / 2 (JAX's), exact in the tail.
Differentiable: yes.
>>> gelu(0.0)
0.0""",
    "softmax": """softmax(x, axis=-1): exponentials normalised to sum to 1 along an axis (over every entry
with axis none, as JAX's), stable for large logits.
Differentiable: yes.
>>> softmax([0.0, 0.0])
[0.5, 0.5]""",
    "log_softmax": """log_softmax(x, axis=-1): ln(softmax(x, axis)), computed stably.
Differentiable: yes.
>>> log_softmax([0.0, 0.0])
[-0.6931471805599453, -0.6931471805599453]""",
    "logsumexp": """logsumexp(x, axis=none, keepdims=false): ln(sum(exp(x))) over all axes or the given ones,
stable for large values.
Differentiable: yes (its gradient is the softmax).
>>> logsumexp([1000.0, 1000.0])
1000.6931471805599""",
    "cross_entropy": """cross_entropy(logits, targets): the mean cross-entropy over a batch. Targets with the
shape of logits are probabilities; targets with that shape minus the last axis are class
indices (whole-number floats), through a stable log-softmax.
Differentiable: yes, in logits (and in probability targets).
>>> cross_entropy([[0.0, 0.0]], [1.0])
0.6931471805599453""",
    "layer_norm": """layer_norm(x, gamma=none, beta=none, eps=1e-5): x normalised over its last axis to mean 0
and variance 1, then scaled by gamma and shifted by beta when given (numbers, or tensors that
broadcast to x's shape: the last axis's length).
Differentiable: yes, in x, gamma and beta.
>>> layer_norm([1.0, 3.0])
[-0.9999950000374997, 0.9999950000374997]""",
    "batch_norm": """batch_norm(x, gamma=none, beta=none, eps=1e-5): each feature normalised over axis 0
(training statistics), then scaled by gamma and shifted by beta when given (numbers, or tensors that
broadcast to x's shape: a feature's shape).
Differentiable: yes, in x, gamma and beta.
>>> batch_norm([[1.0], [3.0]])
[[-0.9999950000374997], [0.9999950000374997]]""",
    # ---------------------------------------------------------------- reductions and linear algebra
    "sum": """sum(x, axis=none, keepdims=false): the sum over all axes (a float) or the given ones. A
float as the second positional argument is an error, not an axis: Python's sum(xs, 0.0) means a
start value (write axis= for an axis held in a float). As numpy's, sum, mean, max, min, prod, var,
std, logsumexp, cumsum, cumprod, any, all and norm also take a tuple of numbers (or of tensors of one
shape), stacked, and a range, its values: sum((a, b)), any((a > 0.0, b > 0.0)), sum(range(10)).
Differentiable: yes.
>>> sum([[1.0, 2.0], [3.0, 4.0]], axis=0)
[4.0, 6.0]""",
    "mean": """mean(x, axis=none, keepdims=false): the mean over all axes or the given ones.
Differentiable: yes.
>>> mean([1.0, 2.0, 6.0])
3.0""",
    "max": """max(x, axis=none, keepdims=false): the largest entry over all axes or the given ones.
The larger of two values, entry by entry, is maximum(a, b): max(x, 0.0) is an error, not the max
along axis 0 (write axis= for an axis held in a float).
Differentiable: yes; entries that tie share the gradient equally.
>>> max([[1.0, 5.0], [3.0, 2.0]], axis=1)
[5.0, 3.0]""",
    "min": """min(x, axis=none, keepdims=false): the smallest entry over all axes or the given ones.
The smaller of two values, entry by entry, is minimum(a, b): min(x, 0.0) is an error, as max's.
Differentiable: yes; entries that tie share the gradient equally.
>>> min([4.0, -1.0, 2.0])
-1.0""",
    "prod": """prod(x, axis=none, keepdims=false): the product over all axes or the given ones.
Differentiable: yes, exactly also where entries are zero.
>>> prod([2.0, 3.0, 4.0])
24.0""",
    "var": """var(x, axis=none, keepdims=false, ddof=0): the squared deviations from the mean, summed
and divided by n - ddof (numpy's; the default is the mean squared deviation, ddof=1 the sample
variance); where ddof is n or more, inf, as numpy's (never a negative variance).
Differentiable: yes.
>>> var([1.0, 3.0])
1.0
>>> var([1.0, 3.0], ddof=1)
2.0""",
    "std": """std(x, axis=none, keepdims=false, ddof=0): the standard deviation, sqrt(var(x, ddof=ddof)).
Differentiable: yes.
>>> std([1.0, 3.0])
1.0""",
    "cumsum": """cumsum(x, axis=none): running sums along an axis (none: of the flattened tensor).
Differentiable: yes.
>>> cumsum([1.0, 2.0, 3.0])
[1.0, 3.0, 6.0]""",
    "argmax": """argmax(x, axis=none): the position of the largest entry (the first, on ties): an int over
the flattened tensor, or a tensor of whole-number floats along an axis.
Differentiable: no.
>>> argmax([1.0, 7.0, 3.0])
1
>>> argmax([[1.0, 7.0], [9.0, 3.0]], axis=1)
[1.0, 0.0]""",
    "argmin": """argmin(x, axis=none): the position of the smallest entry (the first, on ties), as argmax.
Differentiable: no.
>>> argmin([4.0, -1.0, 2.0])
1""",
    "sort": """sort(x, axis=-1): x sorted along an axis, ascending (a stable sort); axis none sorts the
entries flattened, as numpy's.
Differentiable: yes (the gradient goes back to where each entry came from).
>>> sort([3.0, 1.0, 2.0])
[1.0, 2.0, 3.0]""",
    "argsort": """argsort(x, axis=-1): the positions that sort x along an axis (whole-number floats); axis
none: positions in the entries flattened, as numpy's.
Differentiable: no.
>>> argsort([3.0, 1.0, 2.0])
[1.0, 2.0, 0.0]""",
    "matmul": """matmul(a, b): the matrix product a @ b, as numpy's matmul (vectors and stacks of matrices
too).
Differentiable: yes, in a and b.
>>> matmul([[1.0, 2.0]], [[3.0], [4.0]])
[[11.0]]""",
    "einsum": """einsum(spec, *xs): numpy's einsum, e.g. einsum("ij,jk->ik", a, b) is a @ b; a letter twice
in one operand takes its diagonal ("ii->i", "ii" the trace); "..." stands for the axes an operand's
letters leave, broadcast between operands ("...ij,...jk->...ik" multiplies stacks of matrices);
left out of an explicit output, those axes are summed, as in JAX.
Differentiable: yes, in every operand.
>>> einsum("i,i->", [1.0, 2.0], [3.0, 4.0])
11.0""",
    "ssm_scan": """ssm_scan(a, b, x): the linear recurrence h[t] = a[t] * h[t-1] + b[t] * x[t] along axis 0,
with h[-1] = 0, vectorised over the other axes; returns every h[t].
Differentiable: yes, in a, b and x.
>>> ssm_scan([0.5, 0.5], [1.0, 1.0], [1.0, 1.0])
[1.0, 1.5]""",
    # ---------------------------------------------------------------- trees
    "tree_map": """tree_map(f, tree, *more_trees): f applied leaf by leaf (to the matching leaves of every
tree), the result shaped like tree. A tree is any nesting of tuples, maps and structs.
Differentiable: yes, as f is.
>>> tree_map(fn(x) => x * 2.0, {"a": 1.0, "b": (2.0, 3.0)})
{"a": 2.0, "b": (4.0, 6.0)}""",
    "tree_leaves": """tree_leaves(tree): the leaves in order, as a tuple (none leaves are skipped).
Differentiable: yes.
>>> tree_leaves({"a": 1.0, "b": (2.0, 3.0)})
(1.0, 2.0, 3.0)""",
    "global_norm": """global_norm(tree): the L2 norm over every float leaf of the tree.
Differentiable: yes.
>>> global_norm((3.0, [4.0]))
5.0""",
    "clip_by_global_norm": """clip_by_global_norm(tree, max): (the tree scaled so that its global norm is at most max,
the norm before scaling).
Differentiable: yes.
>>> clip_by_global_norm((3.0, 4.0), 1.0)
((0.6, 0.8), 5.0)""",
    # ---------------------------------------------------------------- data, files and runs
    "load_csv": """load_csv(path, header=true, columns=false): a numeric CSV file as a 2-d tensor, or with
columns=true as a map from column name to a column tensor. An empty field is a missing value, nan
(as numpy's genfromtxt and pandas read it); any other field that is not a number is an error. The examples read a file
data.csv holding the lines "x,y", "1,2" and "3,4".
Differentiable: no.
>>> load_csv("data.csv")
[[1.0, 2.0], [3.0, 4.0]]
>>> load_csv("data.csv", columns=true)["y"]
[2.0, 4.0]""",
    "batches": """batches(x, y, size, shuffle=true): (xb, yb) pairs of up to size rows, for a `for` loop;
shuffled afresh on each pass by the seeded generator.
Differentiable: no (the batches are plain values).
>>> len(batches(zeros((5, 2)), zeros(5), 2))
3""",
    "one_hot": """one_hot(labels, n): a tensor of shape shape(labels) + (n,) with 1.0 at each label.
Differentiable: no.
>>> one_hot([0.0, 2.0], 3)
[[1.0, 0.0, 0.0], [0.0, 0.0, 1.0]]""",
    "train_test_split": """train_test_split(x, y, fraction): (x_train, x_test, y_train, y_test) after a seeded
shuffle; fraction is the share of rows that go to the test set.
Differentiable: no.
>>> shape(train_test_split(zeros((10, 2)), zeros(10), 0.3)[1])
(3, 2)""",
    "save": """save(path, tree): write any tree of tensors, numbers, strings, bools, none, tuples, maps and
structs to a checkpoint file, atomically (a crash never leaves half a file); returns none.
Differentiable: no.
>>> save("params.ckpt", {"w": [1.0, 2.0], "step": 3})
>>> load("params.ckpt")["w"]
[1.0, 2.0]""",
    "load": """load(path): the tree stored by save (structs come back as structs of the same name).
Differentiable: no.
>>> save("model.ckpt", (1.5, "adam"))
>>> load("model.ckpt")
(1.5, "adam")""",
    "progress": """progress(iterable, label=""): the iterable's items, for a `for` loop, with a progress bar
(count, percentage, rate, time left) on standard error when it is a terminal, and in place
in a notebook; silent otherwise.
Differentiable: no.
>>> type(progress(range(3)))
"iterator\"""",
    "can_plot": """can_plot(): true where plot can draw, that is where matplotlib (the plot extra) is installed.
Differentiable: no.
>>> type(can_plot())
"bool\"""",
    "plot": """plot(ys) or plot(xs, ys, label=none, title=none, xlabel=none, ylabel=none, path=none): a
line plot (matplotlib, the `plot` extra): shown below the cell in a notebook, written to a PNG
file when path is given (elsewhere, without a path, it draws nothing and says so once). ys is a vector, or a matrix with
one line per column (label then a tuple of names); without xs the x axis counts steps.
Differentiable: no.
>>> plot((0.9, 0.5, 0.3, 0.2), title="training", ylabel="loss", path="loss.png")""",
    # ---------------------------------------------------------------- general
    "print": """print(a, b, ..., sep=" ", end="\\n"): the values as text, separated by sep, then end.
Differentiable: no.
>>> print("loss", 0.5)
loss 0.5""",
    "help": """help(x): the documentation of a builtin, a function (its signature and the comment above
it) or a struct (its fields); help() lists the builtins.
Differentiable: no.
>>> help(erf)
erf(x): the error function.
Differentiable: yes.
    >>> erf(0.0)
    0.0""",
    "str": """str(x): the text print would show.
Differentiable: no.
>>> str((1, 2.5))
"(1, 2.5)\"""",
    "int": """int(x): a float truncated toward zero, a bool as 0 or 1, or a string parsed as an int.
Differentiable: no.
>>> int(-2.7)
-2""",
    "float": """float(x): a number, a numeric string, or a one-element tensor as a float.
Differentiable: yes, for numbers and one-element tensors.
>>> float("1e3")
1000.0""",
    "bool": """bool(x): true for nonzero numbers, non-empty strings and containers, and one-element tensors
holding a nonzero value.
Differentiable: no.
>>> bool(0.0)
false""",
    "type": """type(x): the name of the value's kind ("int", "float", "bool", "string", "none", "tensor",
"tuple", "map", "function", "module"), or a struct's own name.
Differentiable: no.
>>> type([1.0])
"tensor\"""",
    "len": """len(x): the length of a tuple, map, string or range, or the size of a tensor's axis 0.
Differentiable: no.
>>> len((1, 2, 3))
3""",
    "range": """range(n), range(a, b), range(a, b, step): ints, as in Python.
Differentiable: no.
>>> len(range(2, 10, 3))
3""",
    "enumerate": """enumerate(xs, start=0): a tuple of (index, element) pairs.
Differentiable: no.
>>> enumerate(("a", "b"))
((0, "a"), (1, "b"))""",
    "zip": """zip(a, b, ...): a tuple of tuples, as long as the shortest argument.
Differentiable: no.
>>> zip((1, 2), ("x", "y", "z"))
((1, "x"), (2, "y"))""",
    "keys": """keys(m): the keys of map m in insertion order, as a tuple.
Differentiable: no.
>>> keys({"b": 1, "a": 2})
("b", "a")""",
    "values": """values(m): the values of map m in insertion order, as a tuple.
Differentiable: yes, in the values.
>>> values({"b": 1, "a": 2})
(1, 2)""",
    "items": """items(m): the (key, value) pairs of map m in insertion order, as a tuple.
Differentiable: yes, in the values.
>>> items({"a": 1})
(("a", 1),)""",
    "has": """has(m, k): whether map m has key k, as `k in m`.
Differentiable: no.
>>> has({"a": 1}, "b")
false""",
    "get": """get(m, k, default=none): m[k], or default when the key is missing.
Differentiable: yes, in the value read.
>>> get({"a": 1}, "b", 0)
0""",
    "remove": """remove(m, k): a new map without key k (an error when it is missing).
Differentiable: yes, in the values kept.
>>> remove({"a": 1, "b": 2}, "a")
{"b": 2}""",
    "assert": """assert(cond, message="assertion failed"): a `user` error with the message when cond is false.
Differentiable: no.
>>> assert(1 < 2) == none
true""",
    "error": """error(message): stop the program with a `user` error and the message.
Differentiable: no.
>>> type(error)
"function\"""",
    "time": """time(): seconds since the epoch, as a float.
Differentiable: no.
>>> type(time())
"float\"""",
    **LINALG_DOCS,
    **CONV_DOCS,
    **RANDOM_DOCS,
    **TRANSFORM_DOCS,
    **MATH_DOCS,
}
