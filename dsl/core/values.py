"""The runtime values of dg that are not plain Python/numpy objects.

ints, floats, bools, strings and none are Python's; tensors are numpy arrays
(float64, or bool from comparisons); tuples are tuples and maps are dicts
(insertion-ordered). Structs, struct types, functions and modules live here.
"""

import json

import numpy as np

from ..errors import error
from .printing import show
from .tape import peek, raw


class _Named:
    """A value print shows as its repr (`<fn f>`): printing.show asks each value that has
    `dg_text` for its text."""

    __slots__ = ()

    def dg_text(self, show):
        """How print shows it."""
        return repr(self)


class StructDef(_Named):
    """A struct type: its name and field names; calling it builds an instance."""

    __slots__ = ("name", "fields", "index", "span")

    def __init__(self, name, fields, span=None):
        self.name = name
        self.fields = tuple(fields)
        self.index = {f: i for i, f in enumerate(self.fields)}
        self.span = span        # where it is declared (help() shows the comment above), if known

    def __call__(self, *args, **kwargs):
        n = len(self.fields)
        if len(args) > n:
            raise error("type", f"{self.name} has {n} field{'s' * (n != 1)} "
                                f"but {len(args)} values were given")
        vals = list(args) + [_MISSING] * (n - len(args))
        for key, value in kwargs.items():
            i = self.index.get(key)
            if i is None:
                raise error("key", f"{self.name} has no field '{key}' "
                                   f"(its fields are {', '.join(self.fields) or 'none'})")
            if vals[i] is not _MISSING:
                raise error("type", f"the field '{key}' of {self.name} is given twice")
            vals[i] = value
        missing = [self.fields[i] for i, v in enumerate(vals) if v is _MISSING]
        if missing:
            raise error("type", f"{self.name} needs a value for the field"
                                f"{'s' * (len(missing) > 1)} {', '.join(repr(m) for m in missing)}")
        return Struct(self, vals)

    def __repr__(self):
        return f"<struct {self.name}>"


_MISSING = object()


class Struct:
    """An instance of a struct type. From Python: `s.field`, `s._name`, `s._fields`."""

    __slots__ = ("sdef", "vals")

    def __init__(self, sdef, vals):
        if isinstance(sdef, str):
            raise TypeError("use dsl.make_struct(name, **fields) to build a struct from Python")
        self.sdef = sdef
        self.vals = list(vals)

    @property
    def _name(self):
        """The struct type's name."""
        return self.sdef.name

    @property
    def _fields(self):
        """The field names, in declaration order."""
        return self.sdef.fields

    def _asdict(self):
        """The fields as a dict, in order."""
        return dict(zip(self.sdef.fields, self.vals))

    def __getattr__(self, name):
        if name in ("sdef", "vals") or name.startswith("__"):
            raise AttributeError(name)
        try:
            return self.vals[self.sdef.index[name]]
        except (KeyError, AttributeError):
            raise AttributeError(f"struct has no field {name!r}") from None

    def __eq__(self, other):
        return isinstance(other, Struct) and values_equal(self, other)

    def __hash__(self):
        return hash((self.sdef.name, self.sdef.fields))

    def __repr__(self):
        return show(self)

    def dg_text(self, show):
        """`Name(field=value, ...)`, each value as `show` gives it."""
        fields = ", ".join(f"{f}={show(x)}" for f, x in zip(self.sdef.fields, self.vals))
        return f"{self.sdef.name}({fields})"


def make_struct(name, **fields):
    """Build a struct from Python: `make_struct("Linear", w=..., b=...)`."""
    return Struct(StructDef(name, fields.keys()), list(fields.values()))


class Function(_Named):
    """A dg closure: compiled code plus the cells it captured."""

    __slots__ = ("name", "code", "cells", "__weakref__")

    def __init__(self, name, code, cells):
        self.name = name
        self.code = code          # a compiler.FunctionCode
        self.cells = cells        # tuple of Cells, in the code's free-variable order

    def __call__(self, *args, **kwargs):
        return self.code.invoke(self, args, kwargs)

    def __repr__(self):
        return f"<fn {self.name}>"


class Module(_Named):
    """An imported dg module: its top-level names, read as `mod.name`."""

    __slots__ = ("name", "path", "cells")

    def __init__(self, name, path, cells):
        self.name = name
        self.path = path
        self.cells = cells        # name -> Cell

    def __repr__(self):
        return f"<module {self.name}>"


def call(fn, args, kwargs=None):
    """fn(*args, **kwargs) for a Python caller (a builtin calling a dg function back): a dg
    function by its code, other callables as they are. From Python 3.12 a call through an
    object's __call__ counts against a fixed C recursion limit, apart from the depth limit, so
    recursion through a builtin stopped a few hundred levels down; a plain call does not count."""
    if type(fn) is Function:
        return fn.code.invoke(fn, args, kwargs)
    return fn(*args, **kwargs) if kwargs else fn(*args)


def is_callable_value(v):
    """Whether `v` is something a dg program can call."""
    return isinstance(v, (Function, StructDef)) or (callable(v) and not isinstance(v, (type, Module)))


def a_type_name(v):
    """type_name with its article, for messages: "an int", "a tensor"."""
    name = type_name(v)
    if name == "none":
        return name
    return f"an {name}" if name[0] in "aeiou" else f"a {name}"


def brief(v):
    """An option's value as an error message shows it: numbers, strings and tuples of them as
    written in dg (repr, true, none), anything else by its type's name."""
    v = peek(v)
    t = type(v)
    if t is bool:
        return "true" if v else "false"
    if v is None:
        return "none"
    if t is str:
        return json.dumps(v)        # dg's string literal: double quotes, backslash escapes
    if t in (int, float):
        return repr(v)
    if t is tuple and all(type(peek(i)) in (int, float, str, bool, tuple) or peek(i) is None for i in v):
        return "(" + ", ".join(brief(i) for i in v) + ("," if len(v) == 1 else "") + ")"
    return type_name(v)


def type_name(v):
    """The name `type(x)` gives for a value (reference section 3)."""
    v = peek(v)
    t = type(v)
    if t is bool or t is np.bool_:
        return "bool"
    if t is int:
        return "int"
    if t is float or t is np.float64:
        return "float"
    if t is str:
        return "string"
    if v is None:
        return "none"
    if t is np.ndarray:
        return "tensor"
    if t is tuple:
        return "tuple"
    if t is dict:
        return "map"
    if t is Struct:
        return v.sdef.name
    if t is Module:
        return "module"
    if t is range:
        return "range"
    if getattr(v, "dg_iterable", False):
        return "iterator"
    if is_callable_value(v):
        return "function"
    return t.__name__


def values_equal(a, b):
    """Structural equality of two dg values; tensors inside must match in shape and elements."""
    a, b = raw(a), raw(b)
    ta, tb = type(a), type(b)
    if ta is np.ndarray or tb is np.ndarray:
        return ta is tb and a.shape == b.shape and bool(np.array_equal(a, b))
    if ta is tuple or tb is tuple:
        return ta is tb and len(a) == len(b) and all(values_equal(x, y) for x, y in zip(a, b))
    if ta is dict or tb is dict:
        if ta is not tb or len(a) != len(b):
            return False
        for k, v in a.items():
            if k not in b or not values_equal(v, b[k]):
                return False
        return True
    if ta is Struct or tb is Struct:
        return (ta is tb and a.sdef.name == b.sdef.name and a.sdef.fields == b.sdef.fields
                and all(values_equal(x, y) for x, y in zip(a.vals, b.vals)))
    if ta in (Function, StructDef, Module) or tb in (Function, StructDef, Module) or callable(a):
        return a is b
    if a is None or b is None:
        return a is b
    num_a = ta in (int, float, bool) or isinstance(a, np.generic)
    num_b = tb in (int, float, bool) or isinstance(b, np.generic)
    if num_a and num_b:
        return bool(a == b)
    if num_a or num_b:
        return False
    return ta is tb and a == b
