"""Using dg from Python: value conversions, Python-callable dg functions, and host functions.

The `Interpreter` methods `eval`, `get`, `set`, `function`, `grad`,
`value_and_grad`, `define` and `tape` delegate here (docs/python.md).

Conversions, Python -> dg: numpy arrays are copied (float32, float16 and bool
arrays keep their type, others become float64); numpy scalars become Python numbers; lists and tuples become tuples;
dicts become maps; `dsl.Struct`s keep their type; Python callables become host
functions. dg -> Python: tensors come back as fresh numpy arrays, maps as
dicts, tuples as tuples, structs as `dsl.Struct`, and dg functions as Python
callables that convert their arguments and results the same way.

A host function (`Interpreter.define`) is Python code a dg program calls. It is
recorded on the tape as one `HostCall` node; its gradient is the `vjp` given
with it, `vjp(*args, out, g, **kwargs)` returning one gradient per argument (a
tuple when there are several), like dg's `custom_vjp`. Without a `vjp`, a
gradient that has to flow through it is a `grad` error.
"""

import re

import numpy as np

from ..base.cells import UNBOUND
from ..core import ops, tape
from ..core.ops.arith import MAX_INT_DIGITS, too_long
from ..core.ops.core import check_size
from ..core.primitives.batching import batch_size
from ..core.primitives.registry import define
from ..core.tape import Box, peek, raw, record
from ..core.trees import cotangent_value, flatten, is_differentiable_leaf, unflatten
from ..core.values import Function, Module, Struct, StructDef, a_type_name, is_callable_value
from ..errors import DgError, error
from ..frontend.ast import ExprStmt
from ..frontend.parser import parse
from ..frontend.syntax_errors import KEYWORDS
from ..transform.transformed import Transformed
from ..transform.transforms import grad as make_grad, value_and_grad as make_value_and_grad
from .compiler import call_value
from .tape_view import tape_rows

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


# ---------------------------------------------------------------- Python -> dg
def to_dg(value, interp=None):
    """A Python value as a dg value (see the module docstring for the table)."""
    try:
        return _to_dg(value, interp)
    except RecursionError:      # a list inside itself, or nested deeper than Python's stack
        raise error("limit", "the Python value is nested too deeply (or contains itself) "
                             "to become a dg value") from None


def _to_dg(value, interp):
    """to_dg without the guard against runaway nesting."""
    t = type(value)
    if t is int:
        return _bounded_int(value)
    if value is None or t is bool or t is float or t is str:
        return value
    if isinstance(value, np.ndarray):
        return _array_to_dg(value, interp)
    if isinstance(value, np.generic):
        return _scalar_to_dg(value)
    if isinstance(value, (int, float, str)):            # subclasses, such as IntEnum members
        return _plain(value)
    if isinstance(value, (tuple, list)):
        return tuple(_to_dg(v, interp) for v in value)
    if isinstance(value, dict):
        return {_key_to_dg(k): _to_dg(v, interp) for k, v in value.items()}
    if t is Struct:
        return Struct(value.sdef, [_to_dg(v, interp) for v in value.vals])
    if t is PyFunction:
        return value.dg
    if isinstance(value, (Function, StructDef, Module, Transformed, HostFunction, range)):
        return value
    if hasattr(value, "__array__") and not callable(value):
        found = _foreign_array(value, interp)
        if found is not None:
            return found
    if callable(value):
        return HostFunction(getattr(value, "__name__", "host"), value, None, interp)
    raise error("type", f"cannot convert a Python {t.__name__} to a dg value",
                hint="dg takes numbers, strings, bools, None, numpy arrays, tuples, lists, dicts and "
                     "dsl.Struct values")


def _foreign_array(value, interp):
    """Another library's array (JAX's, PyTorch's, a pandas column) as numpy reads it, converted as
    a numpy array (a number where it has no axes); None where numpy cannot read it as numbers."""
    try:
        a = np.asarray(value)
    except Exception:       # a torch tensor that requires grad, a device array numpy cannot reach
        return None
    if type(a) is not np.ndarray or a.dtype.kind not in "biuf":
        return None
    return _array_to_dg(a, interp) if a.ndim else _scalar_to_dg(a[()])


def _bounded_int(value):
    """An int within dg's bound on ints (4,300 digits), else a `limit` error: past it, printing,
    `//` and `%` could run for any time, beyond the reach of the interpreter's limits."""
    if too_long(value):
        raise error("limit", f"a Python int of about {int(value.bit_length() * 0.30103):,} digits is too "
                             f"long for dg (ints have at most {MAX_INT_DIGITS:,} digits)",
                    hint="pass a float for a larger number")
    return value


def _plain(value):
    """A subclass of int, float or str as the plain Python type."""
    if isinstance(value, int):
        return _bounded_int(int(value))
    if isinstance(value, float):
        return float(value)
    return str(value)


def _array_to_dg(a, interp=None):
    """A numpy array as a dg tensor: a copy, float32, float16 and bool ones in their own type and the
    others as float64 (dg's indices and labels are floats), within the interpreter's limits."""
    check_size(a.shape, "tensor", interp.max_tensor_elements if interp is not None else None)
    kind = a.dtype.kind
    if kind == "b":
        return np.array(a, dtype=bool, copy=True)
    if kind == "f" and a.dtype in (np.float32, np.float16):
        return np.array(a, copy=True)
    if kind in "iuf":
        return np.array(a, dtype=np.float64, copy=True)
    raise error("type", f"cannot convert a numpy array of dtype {a.dtype} to a dg tensor",
                hint="dg tensors hold floats, ints or bools")


def _scalar_to_dg(x):
    """A numpy scalar as a Python number or bool."""
    if isinstance(x, np.bool_):
        return bool(x)
    if isinstance(x, np.integer):
        return int(x)
    if isinstance(x, np.floating):
        return float(x)
    if isinstance(x, np.str_):
        return str(x)
    raise error("type", f"cannot convert a numpy {type(x).__name__} to a dg value")


def _key_to_dg(k):
    """A dict key as a map key: a string, an int or a bool."""
    if isinstance(k, np.generic):
        k = _scalar_to_dg(k)
    if isinstance(k, bool):
        return k
    if isinstance(k, (str, int)):
        return _plain(k)
    raise error("type", f"map keys are strings, ints or bools, not a Python {type(k).__name__}")


# ---------------------------------------------------------------- dg -> Python
def to_py(value, interp=None):
    """A dg value as a Python value; boxes are stripped and arrays copied."""
    try:
        return _to_py(value, interp)
    except RecursionError:      # a dg value nested deeper than Python's stack
        raise error("limit", "the dg value is nested too deeply to become a Python value") from None


def _to_py(value, interp):
    """to_py without the guard against runaway nesting."""
    v = raw(value)
    t = type(v)
    if v is None or t is bool or t is int or t is float or t is str:
        return v
    if t is np.ndarray:
        return strip_array(v)
    if isinstance(v, np.generic):
        return _scalar_to_dg(v)
    if t is tuple:
        return tuple(_to_py(x, interp) for x in v)
    if t is dict:
        return {k: _to_py(x, interp) for k, x in v.items()}
    if t is Struct:
        return Struct(v.sdef, [_to_py(x, interp) for x in v.vals])
    if t is HostFunction:
        return v.fn
    if t is Module or t is range:
        return v
    if is_callable_value(v):
        return PyFunction(interp, v)
    return v


def strip_array(a):
    """A fresh copy of a tensor, so Python code cannot change a dg value in place."""
    return np.array(a, copy=True)


# ---------------------------------------------------------------- calling dg from Python
def call_dg(interp, fn, args, kwargs):
    """Call a dg callable on dg values as a run of `interp`: limits armed, errors settled."""
    if interp is None:
        return call_value(fn, args, kwargs, None)
    return interp.call_in_run(call_value, fn, args, kwargs, None)


class PyFunction:
    """A dg function seen from Python: converts arguments in and results out."""

    __slots__ = ("interp", "dg", "__name__")

    def __init__(self, interp, fn, name=None):
        self.interp = interp
        self.dg = fn
        self.__name__ = name or getattr(fn, "name", None) or getattr(fn, "__name__", "function")

    def __call__(self, *args, **kwargs):
        """Call the dg function with Python values; return a Python value."""
        dg_args = tuple(to_dg(a, self.interp) for a in args)
        dg_kwargs = {k: to_dg(v, self.interp) for k, v in kwargs.items()}
        return to_py(call_dg(self.interp, self.dg, dg_args, dg_kwargs), self.interp)

    def __repr__(self):
        return f"<dg function {self.__name__}>"


# ---------------------------------------------------------------- host functions
class HostFunction:
    """A Python function a dg program calls; differentiable only through its `vjp`."""

    __slots__ = ("name", "fn", "vjp", "interp")

    def __init__(self, name, fn, vjp, interp=None):
        self.name = name
        self.fn = fn
        self.vjp = vjp
        self.interp = interp

    def __call__(self, *args, **kwargs):
        """Called by dg with dg values: record a HostCall node when an argument is on a tape."""
        leaves, spec = flatten(args)
        if any(type(x) is Box for x in leaves):
            return record("HostCall", tuple(leaves), {"host": self, "spec": spec, "kwargs": kwargs})
        return self.call_python(args, kwargs)

    def call_python(self, args, kwargs):
        """Convert to Python, call the function, convert its result back."""
        py_args = [to_py(a, self.interp) for a in args]
        py_kwargs = {k: to_py(v, self.interp) for k, v in kwargs.items()}
        try:
            result = self.fn(*py_args, **py_kwargs)
        except DgError:
            raise
        except TypeError as exc:
            raise error("type", f"the host function '{self.name}' raised TypeError: {exc}") from exc
        except Exception as exc:       # the host's own failure, shown as a dg error at the call site
            raise error("user", f"the host function '{self.name}' raised {type(exc).__name__}: {exc}") from exc
        return to_dg(result, self.interp)

    def __repr__(self):
        return f"<fn {self.name}>"


def _on_tape(x):
    """Whether a value has a part that some gradient is being taken through."""
    leaves, _ = flatten(x)
    return any(type(v) is Box and v.op != "Input" for v in leaves)


def host_vjp(g, ans, leaves, kw, wanted):
    """The HostCall rule: call the host's vjp in Python and match its answer to the arguments."""
    host, spec, kwargs = kw["host"], kw["spec"], kw["kwargs"]
    if host.vjp is None:
        raise error("grad", f"the host function '{host.name}' has no gradient rule",
                    tape.get_span(),
                    hint="give one with Interpreter.define(name, fn, vjp=...), or call it on "
                         "stop_gradient(...) values")
    cot = cotangent_value(g, ans)
    if _on_tape(cot) or _on_tape(ans) or any(_on_tape(x) for x in leaves):
        return _host_vjp_step(host, spec, kwargs, cot, ans, leaves, wanted)
    return _host_gradients(host, spec, kwargs, cot, ans, leaves, wanted)


def _host_gradients(host, spec, kwargs, cot, ans, leaves, wanted):
    """Call the host's vjp in Python on plain values; its gradients, one per argument leaf."""
    args = unflatten(spec, leaves)
    py_args = [to_py(a, host.interp) for a in args]
    py_kwargs = {k: to_py(v, host.interp) for k, v in kwargs.items()}
    try:
        result = host.vjp(*py_args, to_py(ans, host.interp), to_py(cot, host.interp), **py_kwargs)
    except DgError:
        raise
    except Exception as exc:
        raise error("user", f"the gradient rule of the host function '{host.name}' raised "
                            f"{type(exc).__name__}: {exc}", tape.get_span()) from exc
    if len(args) == 1:
        result = (result,)
    elif not isinstance(result, (tuple, list)) or len(result) != len(args):
        raise error("grad", f"the gradient rule of the host function '{host.name}' must return a tuple of "
                            f"{len(args)} gradients, one per argument", tape.get_span())
    out = []
    for i, (arg, given) in enumerate(zip(args, result)):
        arg_leaves, _ = flatten(arg)
        if given is None:
            out += [None] * len(arg_leaves)
            continue
        grad_leaves, _ = flatten(to_dg(given, host.interp))
        if len(grad_leaves) != len(arg_leaves):
            raise error("grad", f"the gradient rule of the host function '{host.name}' returned a gradient "
                                f"whose structure does not match argument {i}", tape.get_span())
        grad_leaves = [_gradient_leaf(gl, host, i) for gl in grad_leaves]
        for a, gl in zip(arg_leaves, grad_leaves):
            if gl is not None and is_differentiable_leaf(a) and np.shape(gl) != np.shape(peek(a)):
                raise error("grad", f"the gradient rule of the host function '{host.name}' returned a "
                                    f"gradient of shape {ops.fmt_shape(np.shape(gl))} for argument {i}, "
                                    f"whose shape is {ops.fmt_shape(np.shape(peek(a)))}", tape.get_span())
        out += grad_leaves
    return [o if w else None for o, w in zip(out, wanted)]


def _gradient_leaf(g, host, i):
    """A leaf of a gradient a host's vjp returned: none, a float or a float tensor (an int becomes a
    float); anything else is a `grad` error naming the host function."""
    t = type(g)
    if g is None or t is float or (t is np.ndarray and g.dtype.kind == "f"):
        return g
    if t is int:
        try:
            return float(g)
        except OverflowError:
            raise error("grad", f"the gradient rule of the host function '{host.name}' returned an int too "
                                f"large for a float as a gradient of argument {i}", tape.get_span()) from None
    raise error("grad", f"the gradient rule of the host function '{host.name}' returned {a_type_name(g)} as a "
                        f"gradient of argument {i}, where a number or a tensor was expected", tape.get_span())


# ---------------------------------------------------------------- the HostVjp step
# A gradient staged by jit (jit(grad(f))), or taken under vmap, meets the host's vjp with
# values still being recorded: the vjp is then a step of its own, run in Python when the
# program runs, giving every wanted gradient as one flat vector that ordinary (differentiable)
# steps cut apart. Its own derivative is Python code dg cannot see: an error, never a guess.
def _host_vjp_step(host, spec, kwargs, cot, ans, leaves, wanted):
    """The host's gradients as steps of the trace being recorded (see above)."""
    cot_leaves, cot_spec = flatten(cot)
    ans_leaves, ans_spec = flatten(ans)
    shapes = [np.shape(peek(x)) if w else None for x, w in zip(leaves, wanted)]
    kw = {"host": host, "spec": spec, "kwargs": kwargs, "cot_spec": cot_spec, "ans_spec": ans_spec,
          "counts": (len(cot_leaves), len(ans_leaves)), "shapes": tuple(shapes)}
    flat = record("HostVjp", tuple(cot_leaves) + tuple(ans_leaves) + tuple(leaves), kw)
    out, at = [], 0
    for x, shape in zip(leaves, shapes):
        if shape is None:
            out.append(None)
            continue
        size = int(np.prod(shape, dtype=np.int64))
        piece = ops.index(flat, (slice(at, at + size),))
        at += size
        piece = ops.index(piece, (0,)) if type(peek(x)) is float else ops.reshape(piece, shape)
        dtype = getattr(peek(x), "dtype", None)
        out.append(piece if dtype is None or dtype == np.float64 else ops.astype(piece, dtype))
    return out


def _host_vjp_kernel(*values, host=None, spec=None, kwargs=None, cot_spec=None, ans_spec=None, counts=None,
                     shapes=None):
    """HostVjp on plain values: the host's vjp called in Python, the wanted gradients laid end to end."""
    n_cot, n_ans = counts
    cot = unflatten(cot_spec, list(values[:n_cot]))
    ans = unflatten(ans_spec, list(values[n_cot:n_cot + n_ans]))
    leaves = values[n_cot + n_ans:]
    wanted = [s is not None for s in shapes]
    grads = _host_gradients(host, spec, kwargs, cot, ans, leaves, wanted)
    parts = [np.zeros(int(np.prod(s, dtype=np.int64))) if g is None else np.ravel(np.asarray(g, np.float64))
             for g, s in zip(grads, shapes) if s is not None]
    return np.concatenate(parts) if parts else np.zeros(0)


def _no_second_derivative(kw):
    """HostVjp's own derivative: the host's gradient rule is Python code."""
    raise error("grad", f"cannot take a second derivative through the host function '{kw['host'].name}' "
                        "(its gradient rule is Python code)", tape.get_span())


# ---------------------------------------------------------------- the HostCall step
def _host_kernel(*leaves, host=None, spec=None, kwargs=None):
    """Call the host function again, which records on any outer trace."""
    return host(*unflatten(spec, leaves), **kwargs)


def _per_example(kernel):
    """The batching rule of a step that runs Python code (a host function, its vjp): the kernel
    called once per example, the results stacked."""
    def batch(ns, args, batched, kw):
        size = batch_size(args, batched)
        return ops.stack(tuple(kernel(*[ops.index(a, (i,)) if b else a for a, b in zip(args, batched)], **kw)
                               for i in range(size)))
    return batch


def _host_rule(ns, g, ans, leaves, kw, wanted):
    """HostCall's reverse rule: the host's own vjp (host_vjp)."""
    return host_vjp(g, ans, leaves, kw, wanted)


def _host_forward(ns, tangents, ans, args, kw):
    """HostCall in forward mode: a host function has a reverse-mode rule only."""
    raise error("grad", f"forward mode (jvp, jacfwd, hessian) cannot go through the host function "
                        f"'{kw['host'].name}' (Python code: a host function's gradient rule, its vjp, "
                        f"serves reverse mode only)", tape.get_span(),
                hint="take the derivative with grad, jacrev or vjp")


define("HostCall", _host_kernel, vjp_all=_host_rule, jvp=_host_forward, batch=_per_example(_host_kernel), user_code=True,
       can_fail=True)
define("HostVjp", _host_vjp_kernel, batch=_per_example(_host_vjp_kernel), user_code=True, can_fail=True,
       vjp_all=lambda ns, g, ans, args, kw, wanted: _no_second_derivative(kw),
       jvp=lambda ns, tangents, ans, args, kw: _no_second_derivative(kw))


# ---------------------------------------------------------------- the Interpreter methods
def check_name(name):
    """A name Python code gives dg must be an identifier that is not a reserved word."""
    if not isinstance(name, str) or not _NAME.match(name):
        raise error("name", f"{name!r} is not a dg name (letters, digits and _, not starting with a digit)")
    if name in KEYWORDS:
        raise error("name", f"'{name}' is a reserved word and cannot be used as a name")
    return name


def evaluate(interp, expr, filename="<eval>"):
    """Interpreter.eval: the value of one dg expression, as Python."""
    program = parse(expr, filename)
    if len(program.stmts) != 1 or not isinstance(program.stmts[0], ExprStmt):
        span = program.stmts[0].span if program.stmts else None
        raise error("syntax", "eval takes a single expression", span,
                    hint="use Interpreter.run(...) for statements")
    return to_py(interp._execute(program, interp.main), interp)


def get(interp, name):
    """Interpreter.get: a top-level dg name's value, as Python."""
    return to_py(_lookup(interp, name), interp)


def _lookup(interp, name):
    """The value of a top-level name, or of an imported module's name written as dg does: "nn.mse"."""
    first, *attrs = name.split(".") if isinstance(name, str) else (name,)
    value = interp.lookup(check_name(first))
    for attr in attrs:
        if type(value) is not Module:
            raise error("type", f"{first} is {a_type_name(value)}, not a module, so '{name}' names nothing")
        cell = value.cells.get(check_name(attr))
        if cell is None or cell.v is UNBOUND:
            raise error("name", f"the module {value.name} has no name '{attr}'")
        value = cell.v
    return value


def set_(interp, name, value):
    """Interpreter.set: bind a top-level dg name to a Python value."""
    interp.bind(check_name(name), to_dg(value, interp))


def _callable(interp, target, who):
    """The dg callable named by `target` (a name, or a function from this API)."""
    fn = to_dg(target, interp) if not isinstance(target, str) else _lookup(interp, target)
    if not is_callable_value(fn):
        raise error("type", f"{who} needs a function, but {target!r} is {a_type_name(fn)}")
    return fn


def _argnums(argnums):
    """Python's int, tuple or list of argument positions, as dg takes them."""
    return tuple(argnums) if isinstance(argnums, (list, tuple)) else argnums


def function(interp, name):
    """Interpreter.function: a dg function as a Python callable."""
    fn = _callable(interp, name, "function")
    return PyFunction(interp, fn, name if isinstance(name, str) else None)


def grad(interp, name, argnums=0):
    """Interpreter.grad: a Python callable returning gradients shaped like the arguments."""
    fn = _callable(interp, name, "grad")
    t = make_grad(fn, _argnums(argnums), interp.grad_options)
    return PyFunction(interp, t, t.name)


def value_and_grad(interp, name, argnums=0):
    """Interpreter.value_and_grad: a Python callable returning (value, gradients)."""
    fn = _callable(interp, name, "value_and_grad")
    t = make_value_and_grad(fn, _argnums(argnums), interp.grad_options)
    return PyFunction(interp, t, t.name)


def define(interp, name, fn, vjp=None):
    """Interpreter.define: make a Python function callable from dg as `name`."""
    check_name(name)
    if not callable(fn):
        raise error("type", f"define needs a Python callable for '{name}', got {type(fn).__name__}")
    if vjp is not None and not callable(vjp):
        raise error("type", f"the vjp of '{name}' must be callable, got {type(vjp).__name__}")
    interp.bind(name, HostFunction(name, fn, vjp, interp))


def tape_of(interp):
    """Interpreter.tape: the rows of the most recent gradient computation's tape."""
    return tape_rows(interp.last_tape)


__all__ = ["to_dg", "to_py", "PyFunction", "HostFunction", "call_dg", "evaluate", "get", "set_",
           "function", "grad", "value_and_grad", "define", "tape_of", "check_name"]
