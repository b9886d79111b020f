"""The documentation of the linear algebra builtins (dsl/runtime/builtins/linalg.py), in the form of
dsl/runtime/builtins/docs.py, which merges it."""

NAMES = ["solve", "cholesky", "triangular_solve", "cho_solve", "inv", "det", "slogdet", "eigh", "eigvalsh", "svd",
         "qr", "pinv", "lstsq", "expm", "matrix_power", "kron", "trace", "diagonal", "diag", "outer", "tril", "triu"]

DOCS = {
    "solve": """solve(a, b): x with a @ x = b, for a square a; b is a vector when it has one axis fewer
than a and a's size last (one per matrix), or one axis alone (every matrix solved with it, numpy 2's
reading), else a matrix (or a stack of them). Leading axes are a batch and broadcast, as
numpy.linalg's: a stack of matrices against one right side, or one matrix against a stack; each
gradient comes back in its operand's shape. A singular a is a value error.
Differentiable: yes, in a and b (the matrix rules: b's gradient solves with a's transpose).
>>> solve([[2.0, 0.0], [0.0, 4.0]], [1.0, 1.0])
[0.5, 0.25]""",
    "cholesky": """cholesky(a): the lower triangular l with l @ transpose(l) = a, for a symmetric positive
definite a (of which it reads the symmetric part (a + a^T) / 2, as JAX). A matrix that is not
positive definite is a value error.
Differentiable: yes (the gradient is symmetric).
>>> cholesky([[4.0, 2.0], [2.0, 5.0]])
[[2.0, 0.0], [1.0, 2.0]]""",
    "triangular_solve": """triangular_solve(a, b, lower=false): x with t @ x = b, t the upper (or with
lower=true the lower) triangle of a, the rest of a not read, as scipy's and JAX's solve_triangular.
Differentiable: yes, in a (its triangle) and b.
>>> triangular_solve([[2.0, 0.0], [1.0, 1.0]], [2.0, 3.0], lower=true)
[1.0, 2.0]""",
    "cho_solve": """cho_solve(l, b): x with (l @ transpose(l)) @ x = b, l the factor cholesky gives; a pair
(factor, lower) as JAX's and scipy's takes is read too.
Differentiable: yes, in l and b.
>>> cho_solve(cholesky([[4.0, 2.0], [2.0, 5.0]]), [6.0, 7.0])
[1.0, 1.0]""",
    "inv": """inv(a): the inverse of a square matrix (of each matrix of a stack). A singular a is a value
error; solve(a, b) is faster and more accurate than inv(a) @ b.
Differentiable: yes.
>>> inv([[2.0, 0.0], [0.0, 4.0]])
[[0.5, 0.0], [0.0, 0.25]]""",
    "det": """det(a): the determinant of a square matrix (of each matrix of a stack).
Differentiable: yes: the gradient is the cofactor matrix, det(a) * transpose(inv(a)) where a is
invertible and defined at a singular a too (as JAX's); second derivatives where a is invertible.
>>> det([[2.0, 0.0], [1.0, 3.0]])
6.0""",
    "slogdet": """slogdet(a): (sign, ln |det(a)|), as numpy's: the log-determinant without overflow.
Differentiable: yes in the log (transpose(inv(a))); the sign has no derivative.
>>> slogdet([[2.0, 0.0], [0.0, -3.0]])
(-1.0, 1.791759469228055)""",
    "eigh": """eigh(a): (w, v), the eigenvalues of the symmetric part (a + a^T) / 2 of a in ascending order
and its eigenvectors as the columns of v, as numpy's and JAX's eigh.
Differentiable: yes, where the eigenvalues are distinct (where two are equal the eigenvectors are
not unique, and their derivative is infinite: a numerics error, as JAX gives NaN); each
eigenvector's sign is LAPACK's choice.
>>> eigh([[2.0, 0.0], [0.0, 1.0]])[0]
[1.0, 2.0]""",
    "eigvalsh": """eigvalsh(a): the eigenvalues of the symmetric part of a, ascending.
Differentiable: yes, v diag(g) v^T, finite everywhere (where eigenvalues repeat, a function of
them has a derivative only if it treats them alike, as their sum does).
>>> eigvalsh([[2.0, 1.0], [1.0, 2.0]])
[1.0, 3.0]""",
    "svd": """svd(a, full_matrices=true, compute_uv=true): (u, s, vh) with a = u @ diag(s) @ vh and s
descending, as numpy's; compute_uv=false gives s alone.
Differentiable: yes with full_matrices=false (or a square a) and distinct singular values (the
singular vectors' derivative is infinite where two are equal); s alone everywhere. The columns
past min(m, n) that full_matrices=true adds are not unique and have no derivative (an error).
>>> svd([[3.0, 0.0], [0.0, 4.0]], compute_uv=false)
[4.0, 3.0]""",
    "qr": """qr(a, mode="reduced"): (q, r) with a = q @ r, q's columns orthonormal and r upper triangular
(m x k and k x n, k = min(m, n)), as numpy's; mode="r" gives r alone.
Differentiable: yes for a matrix with at least as many rows as columns and full rank (as JAX; a
wide matrix is an error).
>>> abs(qr([[3.0, 0.0], [0.0, 2.0]], mode="r"))
[[3.0, 0.0], [0.0, 2.0]]""",
    "pinv": """pinv(a, rcond=1e-15): the Moore-Penrose pseudo-inverse, singular values below rcond times the
largest taken as zero (numpy's).
Differentiable: yes (Golub and Pereyra's formula, as JAX), where the rank does not change.
>>> pinv([[2.0, 0.0], [0.0, 0.0]])
[[0.5, 0.0], [0.0, 0.0]]""",
    "lstsq": """lstsq(a, b): (x, residuals, rank, s) as JAX's: x minimises |a @ x - b| (the one of least
norm where several do), residuals its squared error per column (always, where numpy gives an
empty tensor below full rank), rank a float count, s a's singular values.
Differentiable: yes in x, through pinv.
>>> lstsq([[2.0, 0.0], [0.0, 4.0], [0.0, 0.0]], [2.0, 4.0, 1.0])[0]
[1.0, 1.0]""",
    "norm": """norm(x, axis=none, keepdims=false, ord=none): the Euclidean (L2) norm over all entries or
along an axis; with ord, numpy's vector norms (ord a number: sum(abs(x) ** ord) ** (1 / ord), inf
the largest |x|, -inf the smallest, 0 the count of non-zeros) or, for a matrix (axis a pair, or
none on a matrix), its norms "fro", "nuc", 1, -1, 2, -2, inf and -inf. ord is a keyword: the
second argument is the axis, where numpy's is ord.
Differentiable: yes (at 0 the L2 norm's gradient is 0; ties in inf, 1 and 2 share the gradient).
>>> norm([3.0, 4.0])
5.0
>>> norm([3.0, -4.0], ord=1)
7.0""",
    "trace": """trace(a, offset=0): the sum of the diagonal of each matrix (the last two axes, as
numpy.linalg's), or of the diagonal offset above it (below it, for a negative offset).
Differentiable: yes.
>>> trace([[1.0, 2.0], [3.0, 4.0]])
5.0
>>> trace([[1.0, 2.0], [3.0, 4.0]], offset=1)
2.0""",
    "diagonal": """diagonal(a, offset=0): the diagonal of each matrix (the last two axes, as
numpy.linalg's), or the one offset above it (below it, for a negative offset); a diagonal off a
rectangular matrix's corner is empty.
Differentiable: yes.
>>> diagonal([[1.0, 2.0], [3.0, 4.0]])
[1.0, 4.0]
>>> diagonal([[1.0, 2.0], [3.0, 4.0]], -1)
[3.0]""",
    "diag": """diag(v, k=0): a square matrix with the vector v on its diagonal, or on the diagonal k
above it (below it, for a negative k: the matrix has len(v) + abs(k) rows); of a matrix, that
diagonal (numpy's).
Differentiable: yes.
>>> diag([1.0, 2.0])
[[1.0, 0.0], [0.0, 2.0]]
>>> diag([1.0, 2.0], 1)
[[0.0, 1.0, 0.0], [0.0, 0.0, 2.0], [0.0, 0.0, 0.0]]""",
    "outer": """outer(a, b): the outer product a[i] * b[j], each of a and b flattened first (numpy's).
Differentiable: yes.
>>> outer([1.0, 2.0], [3.0, 4.0])
[[3.0, 4.0], [6.0, 8.0]]""",
    "tril": """tril(a, k=0): each matrix's entries on and below diagonal k, zeros above (numpy's).
Differentiable: yes (zero gradient above the diagonal).
>>> tril([[1.0, 2.0], [3.0, 4.0]])
[[1.0, 0.0], [3.0, 4.0]]""",
    "triu": """triu(a, k=0): each matrix's entries on and above diagonal k, zeros below (numpy's).
Differentiable: yes.
>>> triu([[1.0, 2.0], [3.0, 4.0]], 1)
[[0.0, 2.0], [0.0, 0.0]]""",
    "expm": """expm(a): the matrix exponential e^a, the sum of a^k / k! over k >= 0, of a square matrix (of each
matrix of a stack), as scipy's and JAX's expm: scaling and squaring with the [13/13] Pade approximant
(Higham 2005), at least as accurate as scipy's. The solution of the linear system x' = a x is
expm(t * a) @ x(0). A matrix with a NaN or an infinity gives NaN.
Differentiable: yes, at every order: the derivative in a direction e is the upper right block of
expm([[a, e], [0, a]]), the exact Frechet derivative rather than the derivative of the squaring loop.
>>> expm([[0.0, 1.0], [0.0, 0.0]])
[[1.0, 1.0], [0.0, 1.0]]""",
    "matrix_power": """matrix_power(a, n): a multiplied by itself n times, of a square matrix (of each matrix of
a stack), an int n: the identity for 0, inv(a) to the power -n for a negative n (a singular a is
then a value error), as numpy's (the same products in the same order: binary powers of a).
Differentiable: yes, in a.
>>> matrix_power([[1.0, 1.0], [0.0, 1.0]], 5)
[[1.0, 5.0], [0.0, 1.0]]""",
    "kron": """kron(a, b): the Kronecker product, as numpy's: block (i, j) is a[i, j] * b, over any number
of axes (the fewer axes of the two padded with leading ones); the result's shape is the product of
the two shapes, axis by axis.
Differentiable: yes, in a and b.
>>> kron([[1.0, 2.0]], [[1.0], [10.0]])
[[1.0, 2.0], [10.0, 20.0]]""",
}
