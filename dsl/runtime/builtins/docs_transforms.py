"""The documentation of differentiation and the other transformations (dsl/runtime/builtins/grads.py), in the
form of dsl/runtime/builtins/docs.py, which merges it."""

NAMES = ["grad", "value_and_grad", "jacobian", "jacrev", "jacfwd", "hessian", "jvp", "linearize", "vjp", "vmap", "jit",
         "shard", "devices", "stop_gradient", "custom_vjp", "custom_jvp", "checkpoint"]

DOCS = {
    "grad": """grad(f, argnums=0, has_aux=false): a function returning the gradient of the number f
returns, with respect to argument argnums (an int, or a tuple of ints for a tuple of gradients).
A gradient has the shape of its argument: a struct's is a struct, a map's a map. With
has_aux=true, f returns a pair (value, aux) and the function (gradient, aux): aux comes back as
f computed it, not differentiated.
Differentiable: yes (grad(grad(f)) is exact).
>>> grad(fn(x) => x * x)(3.0)
6.0
>>> grad(fn(x) => (x * x, "note"), has_aux=true)(3.0)
(6.0, "note")""",
    "value_and_grad": """value_and_grad(f, argnums=0, has_aux=false): a function returning (f's value, its
gradient); with has_aux=true, ((value, aux), gradient).
Differentiable: yes.
>>> value_and_grad(fn(x) => x * x)(3.0)
(9.0, 6.0)""",
    "jacobian": """jacobian(f, argnums=0, has_aux=false): every derivative of f, shaped out_shape +
in_shape (reverse mode: the same as jacrev); a number's derivative by a number is a number, as
everywhere in dg a value of shape () is. A result that is a struct, map or tuple gives one
like it, each leaf holding that leaf's Jacobian (none for a leaf with no derivative: none, a
string, a bool, an int, as grad gives none for such an argument; an int returned whole is a
number whose derivative is zero, so its Jacobian is zeros); with respect to a structured
argument, each Jacobian is a tree like the argument (JAX's nesting: the result's tree outside,
the argument's inside). With has_aux=true, f returns (value, aux) and the function (Jacobian, aux).
Differentiable: yes.
>>> jacobian(fn(x) => x * 2.0)([1.0, 2.0])
[[2.0, 0.0], [0.0, 2.0]]""",
    "jacrev": """jacrev(f, argnums=0, has_aux=false): the Jacobian by reverse mode, shaped out_shape +
in_shape, nested as jacobian's.
Differentiable: yes.
>>> jacrev(fn(x) => sum(x * x))([1.0, 2.0])
[2.0, 4.0]""",
    "jacfwd": """jacfwd(f, argnums=0, has_aux=false): the Jacobian by forward mode, shaped and nested as
jacobian's, has_aux too (cheaper than jacrev when there are fewer inputs than outputs).
Differentiable: yes.
>>> jacfwd(fn(x) => [x, x * x])(3.0)
[1.0, 6.0]""",
    "hessian": """hessian(f, argnums=0, has_aux=false): exact second derivatives of a number-valued f
(forward mode over reverse mode, JAX's jacfwd(jacrev(f))), shaped in_shape + in_shape. With respect
to a struct, map or tuple, a tree like it whose leaves are trees like it (none at a leaf with no
derivative: a name, a count, a flag among the parameters); for a tuple of argnums, a tuple of
tuples (the block for arguments i and j at [i][j]); has_aux as grad's.
Differentiable: yes.
>>> hessian(fn(x) => x[0] * x[1])([1.0, 2.0])
[[0.0, 1.0], [1.0, 0.0]]
>>> hessian(fn(t) => t[0] * t[1] * t[1])((1.0, 2.0))
((0.0, 4.0), (4.0, 2.0))""",
    "jvp": """jvp(f, primals, tangents): (f(*primals), the output's tangent), by forward mode; primals and
tangents are tuples of matching trees.
Differentiable: yes.
>>> jvp(fn(x) => x * x, (3.0,), (1.0,))
(9.0, 6.0)""",
    "linearize": """linearize(f, *primals): (f(*primals), f_jvp), f_jvp(*tangents) giving jvp's tangent at
the primals from what f's one run kept (none of f's code, prints or draws again; none is zero).
Differentiable: yes.
>>> linearize(fn(x) => x * x, 3.0)[1](1.0)
6.0""",
    "vjp": """vjp(f, *primals, has_aux=false): (f(*primals), pullback); pullback(cotangent) returns a
tuple with one gradient per primal, and may be called many times; with has_aux, (value, pullback, aux).
Differentiable: yes.
>>> vjp(fn(x) => x * x, 3.0)[1](1.0)
(6.0,)""",
    "vmap": """vmap(f, in_axes=0, out_axes=0, explain=false): f mapped over an axis of its arguments, run
batched by each operation's batching rule. in_axes is an int, none (not mapped), or a tuple
with one entry per argument, where an entry may be a tuple, map or struct of them shaped like
the argument (as JAX's; out_axes likewise for the result, where none gives a part that does not
vary over the batch as its one value, and is an error where the examples' differ). A loop in f runs as one loop over
the batch. What vmap staged of f is kept per argument signature and compiled from the second
call. Where a batched value decides control flow, f runs once per example; explain=true says why.
Differentiable: yes.
>>> vmap(fn(x) => sum(x * x))([[1.0, 2.0], [3.0, 4.0]])
[5.0, 25.0]""",
    "jit": """jit(f, explain=false, static_argnums=(), backend=none): f compiled per argument signature
into straight-line code: the same results, output and random draws. The signature is the arguments'
structure, tensor shapes and the values of their strings, bools and none; floats, tensors and
ints are values of the compiled code, so a step counter passed each call does not compile f
again (an int f uses as a shape, an index or a loop's length is part of the signature), nor do
new index tensors (x[idx], gather, scatter_add and segment_sum at token ids, shuffled positions
or a graph's edges, and x[idx] = v or x[:, idx] = v into a float tensor: checked on each call). A
decision on a traced value is guarded: a call that decides differently is compiled again;
explain=true says when and why, naming the argument that changed. A `for` loop over a range
(or over a tensor's rows, `enumerate` and `zip` of them included, as a loop over positions) whose body goes the same way on every iteration is compiled once, as a loop, and so is a
`while` loop, whatever its trip count, also inside grad, jvp and vmap of any depth (f =
grad(grad(grad(g))) stages each of g's loop bodies a few times, not once per iteration); the
body may read and write a tensor's rows, entries, columns and slices at loops' variables (xs[i],
traj[i] = state, u[i, j], x[:, j], a minibatch x[k * b:(k + 1) * b]), carry ints (an optimizer's
step count, a value of the compiled code) and use an int it never changes (a layer's count of
heads); an `if`
in such a body whose branches only compute runs both ways, choosing by where (an int a branch
sets, a count of events, is chosen as an int; a gradient a branch takes is checked for NaN where
the branch is taken); explain=true says
why a loop is not compiled as a loop (a print, a function stored in a variable declared outside the loop, ...). static_argnums (an int or a tuple of ints) names arguments
that are constants of the compiled code, as in JAX: f is compiled for each of their values
(numbers, strings, tensors by value, functions by identity); they cannot be differentiated.
backend is "numpy" (Python code calling numpy) or "xla" (XLA's native code, through JAX: the
xla extra); none takes the interpreter's (numpy unless `dg run --backend xla` or
Interpreter(backend="xla") says otherwise). On XLA, derivatives are still dg's own, results agree
with numpy's to 1e-12 relative (not to the bit), and a program XLA cannot run as numpy does (an
f-string, a while loop under grad, see docs/xla.md) runs on numpy; explain=true says why.
Differentiable: yes.
>>> jit(fn(x) => x * 2.0 + 1.0)(3.0)
7.0""",
    "shard": """shard(f, in_axes=0, explain=false): f compiled by XLA (as jit(f, backend="xla")), each call
run data-parallel over every device XLA sees: a tensor argument whose in_axes entry is an axis
is split along it (its length a multiple of the number of devices), the others are whole on
every device. in_axes is as vmap's: an int or none, or a tuple with one entry per argument.
Unlike vmap, f sees the whole batch: XLA divides the work and adds the communication a sum over
the split axis needs, so the results are f's, as unsharded (to rounding). Needs the xla extra;
docs/xla.md says how the same program runs on the devices of one GPU machine.
Differentiable: yes (grad of shard(f) is taken through f; shard(grad(f)) shards the gradient).
>>> shard(fn(x) => sum(x * x))(tensor([1.0, 2.0, 3.0, 4.0]))
30.0""",
    "devices": """devices(): the devices XLA sees, a tuple of "platform:id" strings ("cpu:0", or "gpu:0" and
so on with a GPU build of JAX). Needs the xla extra.
Differentiable: no.
>>> len(devices()) >= 1
true""",
    "stop_gradient": """stop_gradient(x): x, with no gradient flowing through it at any level.
Differentiable: no (its derivative is taken as zero).
>>> grad(fn(x) => x * stop_gradient(x))(3.0)
3.0""",
    "custom_vjp": """custom_vjp(f, bwd): f, whose gradient is bwd(args..., out, g): one gradient per argument (a
tuple when there are several).
Differentiable: yes, by bwd.
>>> grad(custom_vjp(fn(x) => x * x, fn(x, out, g) => 10.0 * g))(3.0)
10.0""",
    "custom_jvp": """custom_jvp(f, jvp): f, whose derivatives come from jvp(primals, tangents), which returns
(f's value, the output's tangent), as JAX's defjvp rule: primals and tangents are tuples with one
entry per argument (zeros for a float argument that is not differentiated, none for an int).
Forward and reverse mode of every order use the rule (reverse mode by transposing it, so it must
be linear in the tangents).
Differentiable: yes, by jvp.
>>> grad(custom_jvp(fn(x) => ln(1.0 + exp(x)), fn(p, t) => (ln(1.0 + exp(p[0])), t[0] * sigmoid(p[0]))))(1000.0)
1.0""",
    "checkpoint": """checkpoint(f): f, whose intermediate values are not kept on the tape but recomputed during
the backward pass (memory for time); gradients are exactly the same.
Differentiable: yes.
>>> grad(checkpoint(fn(x) => sin(x) * x))(0.0)
0.0""",
}
