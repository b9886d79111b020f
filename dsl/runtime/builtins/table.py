"""The table of builtins an interpreter starts with: every family's functions, bound to the
interpreter where they need its state, each with its documentation (docs.py) as its docstring."""


import inspect

from ...core.ops.core import int_axis
from ...core.ops.reduce import TWO_VALUES
from ...errors import error
from ..compiler import call_error
from . import arrays, conv, core, data, files, grads, help, linalg, numeric, plot, progress, random, stats, tensors, trees
from .docs import DOCS


# What Python's signatures say about the builtins' functions: facts about code objects, never
# about a program or an interpreter, so every interpreter may read them (an interpreter's start
# is otherwise mostly inspect.signature). A builtin that needs no interpreter (a module-level
# function, no closure) is wrapped once per name, and that wrapper, which holds nothing an
# interpreter changes, is every interpreter's.
_SIGNATURES = {}
_SHARED = {}


def make_builtins(interp):
    """Every builtin, bound to `interp` where it needs the interpreter's state, with its
    documentation from dsl/runtime/builtins/docs.py as its docstring."""
    names = {}
    names.update(core.make(interp))
    names.update(tensors.make(interp))
    names.update(trees.BUILTINS)
    names.update(linalg.BUILTINS)
    names.update(arrays.BUILTINS)
    names.update(numeric.BUILTINS)
    names.update(stats.BUILTINS)
    names.update(conv.BUILTINS)
    names.update(random.make(interp), **random.BUILTINS)
    names.update(grads.make(interp))
    names.update(data.make(interp), **files.make(interp), **progress.make(interp))
    names.update(help.make(interp), **plot.make(interp))
    public = {}
    shared = _SHARED
    for name, fn in names.items():
        alone = getattr(fn, "__closure__", True) is None     # a module-level function
        wrapped = shared.get((name, fn)) if alone else None
        if wrapped is None:
            wrapped = _public(fn, _SIGNATURES)
            wrapped.__doc__ = DOCS.get(name)
            if alone:
                shared[(name, fn)] = wrapped
        public[name] = wrapped
    public.update(core.CONSTANTS)       # values, not functions: help.doc_of finds their entries
    return public


def _public(fn, facts):
    """`fn` as a program sees it. Wrong arguments are a `type` DgError wherever the call comes
    from (a program, or a builtin such as tree_map or grad calling its argument), and a
    primitive's `span` parameter (its source location, which the operators pass) is neither a
    positional nor a keyword argument a program can give."""
    got = _facts(fn, facts)
    if got is None:                     # still a wrapper of its own: its docstring is set on it
        def plain(*args, **kwargs):
            return fn(*args, **kwargs)
        plain.__name__ = plain.__qualname__ = getattr(fn, "__name__", "builtin")
        return plain
    sig, hidden, most, at = got
    name = fn.__name__

    def builtin(*args, **kwargs):
        if hidden and (len(args) > most or "span" in kwargs):
            raise call_error(builtin, args, kwargs, TypeError("span"), None)
        if at is not None:
            if "axis" in kwargs:
                kwargs["axis"] = int_axis(kwargs["axis"])
            elif len(args) > at:
                if type(args[at]) is float and name in TWO_VALUES:
                    # max(x, 0.0) is Python's larger of two values and sum(xs, 0.0) its start
                    # value, not an axis (a float axis is accepted where written as axis=)
                    raise error("type", f"{name}'s second argument is an axis, an int; got the float "
                                        f"{args[at]!r}", hint=TWO_VALUES[name])
                args = (*args[:at], int_axis(args[at]), *args[at + 1:])
        try:
            return fn(*args, **kwargs)
        except TypeError as exc:        # a DgError when the arguments do not fit, else re-raised
            raise call_error(builtin, args, kwargs, exc, None) from None
    builtin.__signature__ = sig
    builtin.__name__ = builtin.__qualname__ = fn.__name__
    builtin.__doc__ = fn.__doc__
    return builtin


def _facts(fn, facts):
    """(public signature, has a hidden span, most positional arguments, index of `axis`) of
    `fn`, or None when it has no signature. Closures made by one factory share a code object
    and, for constant defaults, the very same default objects: reading a signature costs more
    than the rest of an interpreter's start, so it is read once per code object and defaults."""
    code = getattr(fn, "__code__", None)
    if hasattr(fn, "__wrapped__") or hasattr(fn, "__signature__"):
        code = None                     # its signature is another function's: read it each time
    defaults = (fn.__defaults__ or (), tuple((fn.__kwdefaults__ or {}).values())) if code else None
    if code in facts:
        known, got = facts[code]
        if len(known[0]) == len(defaults[0]) and len(known[1]) == len(defaults[1]) and all(
                a is b for a, b in zip(known[0] + known[1], defaults[0] + defaults[1])):
            return got
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        got = None
    else:
        public = [p for p in sig.parameters.values() if p.name != "span"]
        most = sum(p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) for p in public)
        # an `axis` given as an int-valued float is that int from here on (what grad & co record)
        at = next((i for i, p in enumerate(public) if p.name == "axis"), None)
        got = (sig.replace(parameters=public), "span" in sig.parameters, most, at)
    if code is not None:
        facts[code] = (defaults, got)
    return got
