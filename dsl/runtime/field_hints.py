"""The hint an error of reading `x.name` gets: a close field or module name, or for a numpy or
JAX habit (a method of an array, `x.at[i].set(v)`), dg's spelling of what was meant."""

from numpy import ndarray

from ..base.suggest import PYTHON_NAMES, REAL_HINT, closest, name_hint
from ..core.tape import peek
from ..core.values import Module, Struct
from ..errors import source_text


# numpy's and JAX's methods and attributes of an array that dg spells otherwise: {o} is the
# array as written, {a} the call's arguments
METHODS = {
    "T": "did you mean transpose({o})?",
    "item": "did you mean float({o})?",
    "dot": "did you mean {o} @ {a}?",
    "flatten": "did you mean ravel({o})?",
    "clip": "did you mean clamp({o}, {a})?",
    "take": "did you mean gather({o}, {a}) (or {o}[{a}])?",
    "copy": "{o} itself is a copy: dg's values are never shared (after let y = {o}, writing y[0] "
            "leaves {o} as it was)",
    "at": "JAX's {o}.at[i].set(v) is {o}[i] = v in dg, and .add(v) is {o}[i] += v (scatter_add where "
          "positions repeat): the variable gets a new tensor, and another name for the old one keeps it",
    # PyTorch's
    "unsqueeze": "did you mean expand_dims({o}, {a})?",
    "detach": "did you mean stop_gradient({o})?",
    "view": "did you mean reshape({o}, {a})?",
    "permute": "did you mean transpose({o}, ({a}))?",
    "numpy": "{o} is a tensor already (a numpy array when it reaches Python)",
    "tolist": "{o} is a tensor already (a numpy array when it reaches Python): dg has no lists",
    "real": REAL_HINT, "imag": REAL_HINT, "conj": REAL_HINT,
}

# PyTorch's autograd on a value (loss.backward(), x.grad): dg differentiates functions
AUTOGRAD = frozenset({"backward", "grad", "requires_grad", "requires_grad_", "retain_grad", "zero_grad"})
AUTOGRAD_HINT = ("dg's values carry no gradient: grad(loss)(params) is the gradient of the function loss at "
                 "params, and value_and_grad(loss)(params) gives the value too")

# methods that take a shape or axes one by one (x.reshape(3, 2)), where dg's builtin takes a tuple
TUPLE_ARGUMENT = {"reshape": "reshape", "view": "reshape", "transpose": "transpose", "permute": "transpose"}


def field_hint(obj, name, obj_text, builtins, call=None):
    """The hint for `obj.name` that failed: a close field or module name, or, for a builtin
    read as a field of a value that has no fields (`t.shape`, `x.mean(axis=0)`), the call that
    was meant, with the arguments `call` (the Call whose function the field is) gives it."""
    v = peek(obj)
    if type(v) is Struct:
        best = closest(name, v.sdef.fields)
        return f"did you mean '.{best}'?" if best else None
    if type(v) is Module:
        return name_hint(name, [n for n, cell in v.cells.items() if not n.startswith("_")])
    if type(v) is str:      # "a,b".split(","): dg's builtin of that name (a key's split) is no string method
        if name == "format":
            return 'an f-string formats values: f"{x} and {y:.3f}"'
        return ('dg\'s strings have no methods: + joins two strings, an f-string formats values '
                '(f"{a}, {b}"), and str(x) makes a string of a value')
    o, a = obj_text or "x", _arguments(call)
    if name in AUTOGRAD and type(v) in (float, int, ndarray):
        return AUTOGRAD_HINT
    if name in TUPLE_ARGUMENT and type(v) is ndarray and call is not None and len(call.args) > 1 and a != "...":
        return f"did you mean {TUPLE_ARGUMENT[name]}({o}, ({a}))?"
    if name in builtins:
        return f"did you mean {name}({o}{', ' + a if a else ''})?"
    if name == "item" and type(v) in (float, int, bool):
        return f"{o} is a number already"
    if name in METHODS and type(v) is ndarray:
        return METHODS[name].format(o=o, a=a or "...")
    if name == "append":
        return PYTHON_NAMES["append"]
    return None


def _arguments(call):
    """The arguments of a call as written ('' for none; '...' where one is not on one line), or
    '' for no call."""
    if call is None:
        return ""
    parts = [source_text(x.span) for x in call.args] + [f"{k}={source_text(x.span)}" for k, x in call.kwargs]
    return "..." if any(not p or p.endswith("=") for p in parts) else ", ".join(parts)
