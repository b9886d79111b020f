"""The differentiation builtins, bound to an interpreter's settings (numerics check, tape)."""

from ...core.tape import peek
from ...core.values import Function, is_callable_value, type_name
from ...errors import error
from ...transform import custom as C, forward as F, transforms as T, vmap as V
from ...transform.jit import jit as make_jit
from ...transform.jit.jit import backend_of
from ...transform.jit.shard import devices, shard as make_shard
from ...transform.jit.static import jit_static, static_argnums_of
from ...transform.linearize import linearize as make_linearize
from .arrays import flag


MAX_COMPILED = 256      # transformed functions `dg run --jit` keeps compiled


def _same_function(kept, f):
    """Whether a function kept in the cache is `f`, or a closure with `f`'s code over the very same
    variables (its Cells kept alive by the kept function, so their ids are theirs alone)."""
    if kept is f:
        return True
    return (type(kept) is Function and type(f) is Function and kept.code is f.code
            and len(kept.cells) == len(f.cells) and all(a is b for a, b in zip(kept.cells, f.cells)))


def _fn(f, who):
    """Check that the argument is a function."""
    if not is_callable_value(peek(f)):
        raise error("type", f"{who} needs a function, got {type_name(f)}")
    return peek(f)


def make(interp):
    """grad & co., using the interpreter's differentiation options."""
    opts = interp.grad_options

    def compiled(name, f, options, make_it):
        """The transformed function; with Interpreter(jit=True) (dg run --jit), compiled, once per
        function and options, so its recordings last from call to call. A closure made again by
        the same expression over the same variables (`grad(fn(q) => loss(q, x))` in a training
        loop) is the same function: it finds the entry of the one before it. At most
        MAX_COMPILED entries are kept, the least recently used dropped first."""
        if not interp.jit:
            return make_it()
        v = peek(f)
        same = (v.code, tuple(id(c) for c in v.cells)) if type(v) is Function else id(v)
        key = (name, same, repr(options))
        cache = interp.compiled
        hit = cache.get(key)
        if hit is not None and _same_function(hit[0], v):
            cache.move_to_end(key)
            return hit[1]
        hit = cache[key] = (v, make_jit(make_it(), False, interp))
        cache.move_to_end(key)
        if len(cache) > MAX_COMPILED:
            cache.popitem(last=False)
        return hit[1]

    def grad(f, argnums=0, has_aux=False):
        """grad(f, argnums=0, has_aux=false): a function returning the gradient of scalar f."""
        return compiled("grad", f, (argnums, has_aux),
                        lambda: T.grad(_fn(f, "grad"), argnums, opts, has_aux=has_aux))

    def value_and_grad(f, argnums=0, has_aux=False):
        """value_and_grad(f, argnums=0, has_aux=false): a function returning (value, gradient)."""
        return compiled("value_and_grad", f, (argnums, has_aux),
                        lambda: T.value_and_grad(_fn(f, "value_and_grad"), argnums, opts, has_aux=has_aux))

    def jacobian(f, argnums=0, has_aux=False):
        """jacobian(f, argnums=0, has_aux=false): the full Jacobian, shape out_shape + in_shape (reverse
        mode, as jacrev)."""
        return compiled("jacobian", f, (argnums, has_aux),
                        lambda: T.jacobian(_fn(f, "jacobian"), argnums, opts, has_aux=has_aux))

    def jacrev(f, argnums=0, has_aux=False):
        """jacrev(f, argnums=0, has_aux=false): the Jacobian by reverse mode, shape out_shape + in_shape."""
        return T.jacobian(_fn(f, "jacrev"), argnums, opts, name="jacrev", has_aux=has_aux)

    def jacfwd(f, argnums=0, has_aux=False):
        """jacfwd(f, argnums=0, has_aux=false): the Jacobian by forward mode, shape out_shape + in_shape."""
        return F.jacfwd(_fn(f, "jacfwd"), argnums, opts, interp=interp, has_aux=has_aux)

    def hessian(f, argnums=0, has_aux=False):
        """hessian(f, argnums=0, has_aux=false): exact second derivatives (forward mode over reverse mode)."""
        return compiled("hessian", f, (argnums, has_aux),
                        lambda: F.hessian(_fn(f, "hessian"), argnums, opts, interp, has_aux=has_aux))

    def jvp(f, primals, tangents):
        """jvp(f, primals, tangents): (f(*primals), the output's tangent), by forward mode."""
        return F.jvp(_fn(f, "jvp"), primals, tangents, opts)

    def vmap(f, in_axes=0, out_axes=0, explain=False):
        """vmap(f, in_axes=0, out_axes=0): f mapped over an axis of its arguments, batched by each
        operation's rule; in_axes is an int, none, or a tuple with one entry per argument."""
        return V.vmap(_fn(f, "vmap"), in_axes, out_axes, flag(explain, "vmap: explain"), interp, cache={})

    def jit(f, explain=False, static_argnums=(), backend=None):
        """jit(f): f compiled per argument signature into straight-line code: the same results,
        output and random draws; explain=true says when it stages f and why; static_argnums names
        arguments that are constants of the compiled code (compiled again for each value);
        backend="xla" compiles with XLA through JAX (the default: the interpreter's, numpy)."""
        nums = static_argnums_of(static_argnums, "jit")
        backend = peek(backend)
        if backend is not None and type(backend) is not str:
            raise error("type", f"jit: backend must be \"numpy\" or \"xla\", got {type_name(backend)}")
        backend = backend_of(backend, interp)
        if nums:
            return jit_static(_fn(f, "jit"), nums, flag(explain, "jit: explain"), interp, backend)
        return make_jit(_fn(f, "jit"), flag(explain, "jit: explain"), interp, backend)

    def shard(f, in_axes=0, explain=False):
        """shard(f, in_axes=0, explain=false): f compiled by XLA, each call's tensors split along
        their in_axes entry over every device XLA sees; the results are f's on the whole batch."""
        return make_shard(_fn(f, "shard"), in_axes, interp, flag(explain, "shard: explain"))

    def vjp(f, *primals, has_aux=False):
        """vjp(f, *primals, has_aux=false): (f(*primals), pullback); pullback(cotangent) gives one
        gradient per primal; with has_aux, (value, pullback, aux)."""
        return T.vjp(_fn(f, "vjp"), primals, opts, has_aux=has_aux)

    def linearize(f, *primals):
        """linearize(f, *primals): (f(*primals), f_jvp); f_jvp(*tangents) is the output's tangent."""
        return make_linearize(_fn(f, "linearize"), primals, opts, lambda: interp.rng)

    def custom_vjp(f, bwd):
        """custom_vjp(f, bwd): f with the gradient bwd(args..., out, g)."""
        return C.custom_vjp(_fn(f, "custom_vjp"), _fn(bwd, "custom_vjp"))

    def custom_jvp(f, jvp):
        """custom_jvp(f, jvp): f with the derivative jvp(primals, tangents) -> (out, tangent_out)."""
        return C.custom_jvp(_fn(f, "custom_jvp"), _fn(jvp, "custom_jvp"))

    def checkpoint(f):
        """checkpoint(f): f, recomputed during backward instead of kept on the tape."""
        return T.checkpoint(_fn(f, "checkpoint"), opts, lambda: interp.rng)

    return {"grad": grad, "value_and_grad": value_and_grad, "jacobian": jacobian, "jacrev": jacrev,
            "jacfwd": jacfwd, "hessian": hessian, "jvp": jvp, "vjp": vjp, "linearize": linearize, "vmap": vmap, "jit": jit,
            "stop_gradient": T.stop_gradient, "custom_vjp": custom_vjp, "custom_jvp": custom_jvp,
            "checkpoint": checkpoint, "shard": shard, "devices": devices}
