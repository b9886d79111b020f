"""The documentation of the numeric constants (dsl/runtime/builtins/core.py's CONSTANTS), of numpy's
trigonometric, hyperbolic and logistic functions and of its array functions (arrays.py), in the
form of dsl/runtime/builtins/docs.py, which merges it."""

NAMES = ["pi", "e", "inf", "nan", "newaxis"]
ARRAYS = ["flip", "roll", "diff", "cumprod", "meshgrid", "tile", "repeat", "take_along_axis", "scatter_add",
          "segment_sum", "top_k", "searchsorted", "digitize", "isnan", "isfinite", "isinf", "allclose", "isclose", "any", "all",
          "logical_and", "logical_or", "logical_xor", "logical_not", "squeeze", "expand_dims", "broadcast_to",
          "ravel", "moveaxis", "swapaxes", "full_like", "square", "sinc", "cross", "trapezoid", "interp", "quantile",
          "median", "histogram", "cov", "corrcoef", "nansum", "nanmean", "polyval"]
FUNCTIONS = ["tan", "asin", "acos", "atan", "atan2", "hypot", "cbrt", "sinh", "cosh", "asinh", "acosh", "atanh", "log_sigmoid",
             "logit", "logaddexp", "xlogy", "erfinv", "erfcinv", "ndtr", "log_ndtr", "ndtri", "lgamma", "digamma",
             "gammainc", "gammaincc"]

DOCS = {
    "pi": """pi: the float 3.141592653589793, a circle's circumference over its diameter.
Differentiable: no (a constant).
>>> cos(pi)
-1.0""",
    "e": """e: the float 2.718281828459045, the base of ln.
Differentiable: no (a constant).
>>> ln(e)
1.0""",
    "inf": """inf: the float infinity (IEEE), as numpy's inf; -inf is its negative.
Differentiable: no (a constant).
>>> 1.0 / inf
0.0""",
    "nan": """nan: the float not-a-number (IEEE), as numpy's nan; nan == nan is false.
Differentiable: no (a constant).
>>> nan == nan
false""",
    "newaxis": """newaxis: none, as numpy's newaxis: in an index it adds an axis of length 1 there.
Differentiable: no (a constant).
>>> shape([1.0, 2.0][:, newaxis])
(2, 1)""",
    "xlogy": """xlogy(x, y): x * ln(y), and 0 where x is 0 whatever y is (scipy's and JAX's): the terms
of an entropy or a likelihood, where 0 ln 0 counts as 0.
Differentiable: yes, in x (ln(y)) and in y (x / y, as JAX's: nan at x = y = 0).
>>> xlogy(0.0, 0.0)
0.0""",
    "erfinv": """erfinv(x): the inverse of erf, for x in [-1, 1] (inf at 1, nan outside), to double precision.
Differentiable: yes (sqrt(pi) / 2 * exp(erfinv(x)^2)).
>>> erfinv(erf(0.5))
0.5""",
    "erfcinv": """erfcinv(x): the inverse of erfc, for x in [0, 2] (inf at 0, -inf at 2, nan outside), to double
precision also where 1 - x would round a small x away (erfcinv(1e-20) is 6.60, where erfinv(1 - 1e-20)
is inf): a normal distribution's far tails.
Differentiable: yes (-sqrt(pi) / 2 * exp(erfcinv(x)^2)).
>>> erfcinv(erfc(7.0))
7.0""",
    "lgamma": """lgamma(x): ln |Gamma(x)| (math.lgamma, scipy's gammaln); inf at 0, -1, -2, ...
Differentiable: yes (digamma(x)).
>>> lgamma(1.0)
0.0""",
    "digamma": """digamma(x): the derivative of lgamma, psi(x) (scipy's digamma); nan at 0, -1, -2, ...
Differentiable: yes, to every order (its derivatives are the polygamma functions, to double precision
except near the zeros of the even orders at negative x, as scipy's).
>>> abs(digamma(1.0) + 0.5772156649015329) < 1e-14
true""",
    "tan": """tan(x): the tangent, elementwise.
Differentiable: yes (1 + tan(x)^2).
>>> tan(0.0)
0.0""",
    "asin": """asin(x): the arcsine (numpy's arcsin), in [-pi/2, pi/2]; nan outside [-1, 1].
Differentiable: yes (1 / sqrt(1 - x^2); infinite at -1 and 1).
>>> asin(1.0)
1.5707963267948966""",
    "acos": """acos(x): the arccosine (numpy's arccos), in [0, pi]; nan outside [-1, 1].
Differentiable: yes (-1 / sqrt(1 - x^2)).
>>> acos(1.0)
0.0""",
    "atan": """atan(x): the arctangent (numpy's arctan), in (-pi/2, pi/2).
Differentiable: yes (1 / (1 + x^2)).
>>> atan(1.0) * 4.0
3.141592653589793""",
    "atan2": """atan2(y, x): the angle of the point (x, y), in [-pi, pi] (numpy's arctan2), with broadcasting.
Differentiable: yes, in y (x / (x^2 + y^2)) and x (-y / (x^2 + y^2)).
>>> atan2(1.0, -1.0)
2.356194490192345""",
    "hypot": """hypot(x, y): sqrt(x^2 + y^2) without overflow or underflow in the squares (numpy's), with
broadcasting.
Differentiable: yes, in x (x / hypot) and y (y / hypot); 0 at the origin, as abs'(0) = 0.
>>> hypot(3.0, 4.0)
5.0""",
    "cbrt": """cbrt(x): the real cube root, elementwise (negative for negative x; exact for perfect cubes).
Differentiable: yes (1 / (3 cbrt(x)^2), infinite at 0).
>>> cbrt(-27.0)
-3.0""",
    "sinh": """sinh(x): the hyperbolic sine, elementwise.
Differentiable: yes (cosh(x)).
>>> sinh(0.0)
0.0""",
    "cosh": """cosh(x): the hyperbolic cosine, elementwise.
Differentiable: yes (sinh(x)).
>>> cosh(0.0)
1.0""",
    "asinh": """asinh(x): the inverse hyperbolic sine (numpy's arcsinh).
Differentiable: yes (1 / sqrt(x^2 + 1)).
>>> asinh(0.0)
0.0""",
    "acosh": """acosh(x): the inverse hyperbolic cosine (numpy's arccosh); nan below 1.
Differentiable: yes (1 / sqrt(x^2 - 1)).
>>> acosh(1.0)
0.0""",
    "atanh": """atanh(x): the inverse hyperbolic tangent (numpy's arctanh); infinite at -1 and 1.
Differentiable: yes (1 / (1 - x^2)).
>>> atanh(0.0)
0.0""",
    "log_sigmoid": """log_sigmoid(x): ln(sigmoid(x)) = -softplus(-x), without overflow for large |x|.
Differentiable: yes (sigmoid(-x)).
>>> log_sigmoid(-1000.0)
-1000.0""",
    "logit": """logit(p): ln(p / (1 - p)), the inverse of sigmoid; -inf at 0, inf at 1, nan outside.
Differentiable: yes (1 / (p (1 - p))).
>>> logit(0.5)
0.0""",
    "flip": """flip(x, axis=none): x with its entries in reverse order along an axis or a tuple of axes
(along every axis: none).
Differentiable: yes.
>>> flip([1.0, 2.0, 3.0])
[3.0, 2.0, 1.0]""",
    "roll": """roll(x, shift, axis=none): entries moved shift places along an axis, those past the end coming
back at the start (numpy's; with axis none, over the flattened tensor). shift and axis may be tuples
paired entry by entry (one int serves every axis); the shifts of one axis add.
Differentiable: yes.
>>> roll([1.0, 2.0, 3.0], 1)
[3.0, 1.0, 2.0]""",
    "isclose": """isclose(a, b, rtol=1e-05, atol=1e-08): entry by entry, whether |a - b| <= atol + rtol |b|
(numpy's; an infinity is close to itself, nan to nothing): a bool tensor, a bool for numbers.
Differentiable: no (a comparison).
>>> isclose([1.0, 2.0], [1.0 + 1e-9, 2.1])
[true, false]""",
    "any": """any(x, axis=none, keepdims=false): whether any entry is true (not zero; nan counts as true),
over all entries (a bool) or along the given axes (a bool tensor).
Differentiable: no (a test of entries).
>>> any([0.0, 2.0] > 1.0)
true""",
    "all": """all(x, axis=none, keepdims=false): whether every entry is true (not zero; nan counts as true),
over all entries (a bool) or along the given axes (a bool tensor).
Differentiable: no (a test of entries).
>>> all([[1.0, 0.0], [2.0, 3.0]], axis=1)
[false, true]""",
    "logical_and": """logical_and(a, b): entry by entry, whether both are true (numpy's & on masks), a bool tensor
(a bool for two bools); numbers count as true where they are not zero. `and` takes two single bools.
Differentiable: no (a mask).
>>> logical_and([1.0, 2.0, 3.0] > 1.5, [1.0, 2.0, 3.0] < 2.5)
[false, true, false]""",
    "logical_or": """logical_or(a, b): entry by entry, whether either is true (numpy's | on masks).
Differentiable: no (a mask).
>>> logical_or([true, false], [false, false])
[true, false]""",
    "logical_xor": """logical_xor(a, b): entry by entry, whether exactly one of the two is true.
Differentiable: no (a mask).
>>> logical_xor([true, true], [true, false])
[false, true]""",
    "logical_not": """logical_not(x): entry by entry, whether x is false (numpy's ~ on a mask).
Differentiable: no (a mask).
>>> logical_not([1.0, 2.0] > 1.5)
[true, false]""",
    "squeeze": """squeeze(x, axis=none): x without its axes of length 1: all of them, or the given ones
(an int or a tuple; an axis whose length is not 1 is a shape error).
Differentiable: yes.
>>> shape(squeeze(zeros((1, 3, 1))))
(3,)""",
    "expand_dims": """expand_dims(x, axis): x with a new axis of length 1 at each position given (an int or a
tuple, counted in the result's axes), as x[none] does at the front.
Differentiable: yes.
>>> shape(expand_dims(zeros((2, 3)), (0, -1)))
(1, 2, 3, 1)""",
    "broadcast_to": """broadcast_to(x, shape): x repeated along new leading axes and along its axes of length 1
to the given shape, as numpy's broadcasting would (a shape it does not broadcast to is a shape error).
Differentiable: yes (the gradient sums over the repeated axes).
>>> broadcast_to([1.0, 2.0], (2, 2))
[[1.0, 2.0], [1.0, 2.0]]""",
    "ravel": """ravel(x): x's entries along one axis, in row-major order (reshape(x, -1)).
Differentiable: yes.
>>> ravel([[1.0, 2.0], [3.0, 4.0]])
[1.0, 2.0, 3.0, 4.0]""",
    "moveaxis": """moveaxis(x, source, destination): x with the axes at source (an int or a tuple) moved to the
positions destination (as many), the other axes kept in their order, as numpy's.
Differentiable: yes.
>>> shape(moveaxis(zeros((2, 3, 4)), 0, -1))
(3, 4, 2)""",
    "swapaxes": """swapaxes(x, axis1, axis2): x with two axes exchanged.
Differentiable: yes.
>>> shape(swapaxes(zeros((2, 3, 4)), 0, 2))
(4, 3, 2)""",
    "full_like": """full_like(x, v, dtype=none): a tensor of x's shape and element type (or dtype's) filled with v.
Differentiable: yes, in v (as full's fill value); not in x, whose values it does not read.
>>> full_like([1.0, 2.0], 7.0)
[7.0, 7.0]""",
    "square": """square(x): x * x, entry by entry.
Differentiable: yes.
>>> square([2.0, -3.0])
[4.0, 9.0]""",
    "sinc": """sinc(x): sin(pi x) / (pi x), and 1 at 0: numpy's and JAX's normalised sinc, entry by entry.
Differentiable: yes, at 0 too (by its Taylor series near 0, exact to the twentieth derivative: the
second is -pi^2 / 3, where where(x == 0.0, 1.0, ...) of the quotient would give 0).
>>> sinc([0.0, 0.5, 1.0])
[1.0, 0.6366197723675814, 3.8981718325193755e-17]""",
    "cross": """cross(a, b, axis=-1): the cross product of 3-vectors laid along an axis (numpy's), batched
over the other axes, which broadcast.
Differentiable: yes, in a and b.
>>> cross([1.0, 0.0, 0.0], [0.0, 1.0, 0.0])
[0.0, 0.0, 1.0]""",
    "trapezoid": """trapezoid(y, x=none, dx=1.0, axis=-1): the integral of y along an axis by the trapezoid rule
(numpy's), at the sample points x (a vector as long as that axis, or a tensor of y's shape) or at
points dx apart.
Differentiable: yes, in y, x and dx.
>>> trapezoid([1.0, 2.0, 3.0], x=[0.0, 1.0, 3.0])
6.5""",
    "interp": """interp(x, xp, fp, left=none, right=none): the piecewise-linear function through the points
(xp, fp) at x (numpy's interp): xp a vector of increasing knots, fp their values; fp[0] (or left)
below xp[0], fp[-1] (or right) above xp[-1].
Differentiable: yes, in x, xp and fp (one-sided at a knot: the segment to its right, as the
segment search takes a knot as the start of the next).
>>> interp([0.5, 2.0, 9.0], [0.0, 1.0, 3.0], [0.0, 10.0, 30.0])
[5.0, 20.0, 30.0]""",
    "quantile": """quantile(x, q, axis=none, keepdims=false): the q-th quantile, q a number in [0, 1], of all
entries or along an axis, interpolating linearly between the sorted entries (numpy's default,
"linear"); nan where a nan is among them, as numpy's. A tensor of q gives one quantile per entry
of q, along new leading axes, as numpy's.
Differentiable: yes in x (through the sort: the entries the quantile lies between), not in q.
>>> quantile([4.0, 1.0, 3.0, 2.0], 0.25)
1.75""",
    "histogram": """histogram(x, bins=10, range=none, weights=none, density=false): (counts, edges) of x's entries,
as numpy's: bins equal bins over range, a (lo, hi) pair (x's smallest and largest entries when
none), or the given increasing edges; a bin holds lo <= x < hi, the last one its upper edge too,
and entries outside the edges are not counted. weights counts each entry by its weight; density
divides the counts by their total times the bin's width. Counts are floats.
Differentiable: yes in weights (each weight moves its bin's count); not in x, whose bins are positions.
>>> histogram([1.0, 2.0, 2.5, 4.0], bins=3)[0]
[1.0, 2.0, 1.0]""",
    "median": """median(x, axis=none, keepdims=false): the middle of the sorted entries (the mean of the two
middle ones for an even count), of all entries or along an axis; nan where a nan is among them.
Differentiable: yes (through the sort).
>>> median([[1.0, 5.0, 2.0], [4.0, 3.0, 6.0]], axis=1)
[2.0, 4.0]""",
    "diff": """diff(x, n=1, axis=-1): the differences of neighbours along an axis, taken n times (numpy's).
Differentiable: yes.
>>> diff([1.0, 4.0, 9.0])
[3.0, 5.0]""",
    "cumprod": """cumprod(x, axis=none): running products along an axis (none: of the flattened tensor).
Differentiable: yes (also where an entry is zero).
>>> cumprod([1.0, 2.0, 3.0])
[1.0, 2.0, 6.0]""",
    "meshgrid": """meshgrid(*xs, indexing="xy"): a tuple of coordinate tensors over the grid the vectors xs
span, as numpy's (with "xy" the first vector runs along the columns, with "ij" along the rows).
Differentiable: yes.
>>> meshgrid([1.0, 2.0], [3.0], indexing="ij")
([[1.0], [2.0]], [[3.0], [3.0]])""",
    "isnan": """isnan(x): which entries are nan: a bool tensor, or a bool for a number.
Differentiable: no (a mask).
>>> isnan([1.0, nan])
[false, true]""",
    "isfinite": """isfinite(x): which entries are neither infinite nor nan: a bool tensor, or a bool for a number.
Differentiable: no (a mask).
>>> isfinite([1.0, inf])
[true, false]""",
    "searchsorted": """searchsorted(a, v, side="left"): where each entry of v would go in the sorted vector a to
keep it sorted: before the entries equal to it ("left") or after them ("right"), as numpy's (nan
after every number). An int for a number v, else float positions of v's shape.
Differentiable: no (positions).
>>> searchsorted([1.0, 2.0, 3.0], [2.0, 2.5, 9.0])
[1.0, 2.0, 3.0]""",
    "digitize": """digitize(x, bins, right=false): the bin of each entry of x between the increasing edges bins,
as numpy's: i where bins[i-1] <= x < bins[i], 0 below the first edge and len(bins) from the last
on; with right=true, bins[i-1] < x <= bins[i]. Positions as searchsorted gives them.
Differentiable: no (positions).
>>> digitize([0.5, 1.0, 2.5], [1.0, 2.0])
[0.0, 1.0, 2.0]""",
    "isinf": """isinf(x): which entries are infinite, of either sign: a bool tensor, or a bool for a number.
Differentiable: no (a mask).
>>> isinf([1.0, -inf, nan])
[false, true, false]""",
    "allclose": """allclose(a, b, rtol=1e-05, atol=1e-08): whether every |a - b| <= atol + rtol * |b| (numpy's).
Differentiable: no (a bool).
>>> allclose([1.0, 2.0], [1.0, 2.0000001])
true""",
    "tile": """tile(x, reps): x repeated reps times along each axis (numpy's): reps an int or a tuple;
the shorter of shape(x) and reps is padded with leading ones.
Differentiable: yes (each copy's gradient added back).
>>> tile([1.0, 2.0], 2)
[1.0, 2.0, 1.0, 2.0]""",
    "repeat": """repeat(x, repeats, axis=none): each entry repeated along an axis (numpy's; of the flattened
x when axis is none), repeats an int or one non-negative int per entry.
Differentiable: yes.
>>> repeat([1.0, 2.0], (1, 3))
[1.0, 2.0, 2.0, 2.0]""",
    "take_along_axis": """take_along_axis(x, indices, axis): x's entries at the positions indices along axis
(numpy's): indices has as many axes as x and broadcasts against it along the others (axis none:
x flattened, indices one axis); negative indices count from the end, an index out of range is an
index error.
Differentiable: yes, in x.
>>> take_along_axis([[1.0, 2.0], [3.0, 4.0]], [[1.0], [0.0]], 1)
[[2.0], [3.0]]""",
    "scatter_add": """scatter_add(x, indices, values): x with row i of values added to row indices[i] of x,
repeated indices adding up (JAX's x.at[indices].add(values), numpy's add.at on a copy). values
broadcast to the rows indexed, as theirs do: a number, or one row, adds to every indexed row.
Differentiable: yes, in x and values.
>>> scatter_add(zeros(3), [0.0, 2.0, 0.0], [1.0, 2.0, 3.0])
[4.0, 0.0, 2.0]""",
    "segment_sum": """segment_sum(data, segment_ids, num_segments): a tensor of num_segments rows, row s the sum
of the rows of data whose id is s (JAX's segment_sum); an id outside [0, num_segments) is an
index error (JAX drops it).
Differentiable: yes, in data.
>>> segment_sum([1.0, 2.0, 3.0], [1.0, 1.0, 0.0], 2)
[3.0, 3.0]""",
    "top_k": """top_k(x, k): (values, indices) of the k largest entries along the last axis, largest first,
the lower index first on ties (JAX's lax.top_k); indices as floats.
Differentiable: yes, in x (the values; the gradient goes to the entries chosen).
>>> top_k([3.0, 1.0, 4.0], 2)
([4.0, 3.0], [2.0, 0.0])""",
    "logaddexp": """logaddexp(a, b): ln(exp(a) + exp(b)) without overflow (numpy's), with broadcasting.
Differentiable: yes, in a and b (the softmax of the two).
>>> logaddexp(1000.0, 1000.0)
1000.6931471805599""",
    "cov": """cov(x, y=none, rowvar=true, bias=false, ddof=none): the covariance matrix of the variables,
as numpy's cov: each row of x a variable and each column an observation (each column a variable
with rowvar=false); a vector is one variable, and y adds its variables after x's. Deviations from
each variable's mean, their products summed over the observations and divided by their number less
ddof (1 unless bias=true, then 0). Of one variable, its variance as a number.
Differentiable: yes, in x and y.
>>> cov([[1.0, 2.0, 3.0], [2.0, 4.0, 7.0]])
[[1.0, 2.5], [2.5, 6.333333333333333]]""",
    "corrcoef": """corrcoef(x, y=none, rowvar=true): the correlation coefficients of the variables (x and y read
as by cov): the covariance over the product of the two standard deviations, clipped to [-1, 1]
against rounding, as numpy's and JAX's. A variable that does not vary gives nan.
Differentiable: yes, in x and y.
>>> corrcoef([1.0, 2.0, 3.0], [1.0, 3.0, 2.0])
[[1.0, 0.5], [0.5, 1.0]]""",
    "nansum": """nansum(x, axis=none, keepdims=false): the sum of the entries that are not nan, of all or
along an axis (a tuple of axes), as numpy's: a nan counts as 0.
Differentiable: yes (0 for the nan entries).
>>> nansum([1.0, nan, 2.0])
3.0""",
    "nanmean": """nanmean(x, axis=none, keepdims=false): the mean of the entries that are not nan, of all or
along an axis (a tuple of axes), as numpy's; nan where every entry is nan.
Differentiable: yes (0 for the nan entries).
>>> nanmean([[1.0, nan], [3.0, 4.0]], axis=0)
[2.0, 4.0]""",
    "polyval": """polyval(p, x): the polynomial with coefficients p, the highest power first, at x (a number
or a tensor, entry by entry), as numpy's: Horner's scheme, p[0] * x^(n-1) + ... + p[n-1].
Differentiable: yes, in p and x.
>>> polyval([1.0, -2.0, 3.0], 2.0)
3.0""",
    "ndtr": """ndtr(x): the standard normal distribution's CDF, P(Z <= x) = (1 + erf(x / sqrt(2))) / 2
(scipy's ndtr), each tail through erfc so that its small values keep their digits (JAX's form).
Differentiable: yes (the normal density, exp(-x^2 / 2) / sqrt(2 pi)).
>>> ndtr(1.0)
0.841344746068543""",
    "log_ndtr": """log_ndtr(x): ln ndtr(x) (scipy's log_ndtr), finite far into the lower tail where ndtr itself
underflows to 0 (an asymptotic series below x = -37), and to the last digits above 0, where ndtr
is 1 less a small mass: a probit model's or a censored Gaussian's log-likelihood.
Differentiable: yes (the density over ndtr, the inverse Mills ratio, finite in both tails).
>>> log_ndtr(-40.0)
-804.6084420137538""",
    "ndtri": """ndtri(p): the standard normal distribution's quantile, the x with ndtr(x) = p, for p in
[0, 1] (-inf at 0, inf at 1, nan outside), scipy's ndtri: -sqrt(2) erfcinv(2 p), which keeps a
tiny p's digits.
Differentiable: yes (one over the normal density at the quantile).
>>> ndtri(0.975)
1.9599639845400538""",
    "gammainc": """gammainc(a, x): the regularized lower incomplete gamma function P(a, x), the integral of
t^(a-1) e^-t from 0 to x over Gamma(a) (scipy's gammainc): the CDF of a gamma distribution of shape
a at x, and of a chi-square one with k degrees of freedom as gammainc(k / 2, x / 2). a >= 0 and
x >= 0, nan otherwise (and at a = x = 0); 1 at a = 0 < x. A series below x = a + 1, Legendre's
continued fraction from there on, within about 2e-13 of the exact value for a up to 1e5 (scipy's
strays by 1e-11 at large a); they converge for every x up to a = 1e6, and past about 1e7 not near
x = a, where the result is nan rather than a number they cannot vouch for.
Differentiable: yes, in x at every order (the gamma density), and once in a (the derivative the
series and the fraction give beside their value); a second derivative in a is a grad error.
>>> gammainc(1.0, 2.0)
0.8646647167633874""",
    "gammaincc": """gammaincc(a, x): the regularized upper incomplete gamma function Q(a, x) = 1 - P(a, x)
(scipy's gammaincc), computed directly where it is small (x >= a + 1): the survival function of a
gamma distribution, and the probability that a Poisson count of mean x is below a whole a.
Differentiable: yes, as gammainc (its derivatives negated).
>>> gammaincc(1.0, 40.0)
4.2483542552915935e-18""",
}
