"""The signature of a jitted call: what a recording depends on besides the float and tensor values
(the arguments' structure, their strings, bools and ints, and which functions they hold), found
with the call's staged leaves in one walk, and said in words where two differ."""

import numpy as np

from ...core.printing import show
from ...core.tape import Box, peek
from ...core.values import Struct


def signature(args, kwargs, ints=False):
    """What a recording depends on besides the float and tensor values (and, with `ints`, the
    ints' values, which its guards check instead): a hashable key."""
    return _walked_call(args, kwargs, ints, [])


def _flat_call(args, ints=False):
    """(signature(args, {}), the staged leaves) for positional arguments that are all numbers,
    strings or tensors (the common call: nothing to flatten), else None. The key is built here
    as _key builds it, one look at each argument: this is most of a small jitted call's cost."""
    keys, leaves = ["tuple"], []
    for v in args:
        t = type(v)
        if t is float or t is np.float64:
            keys.append("f")
            leaves.append(v)
        elif t is np.ndarray:
            keys.append(("t", v.shape, v.dtype.str))
            leaves.append(v)
        elif t is int and ints:
            keys.append("i")
            leaves.append(v)
        elif t is int or t is bool or t is str:
            keys.append((t.__name__, v))
        else:
            return None
    return (tuple(keys), ()), leaves


def _walked_call(args, kwargs, ints, values):
    """signature(args, kwargs, ints), the call's staged leaves appended to `values` in flatten's
    order, in one walk (a structured call's cost from Python was mostly walking its arguments
    twice). A Box among them is one leaf: the caller tells a call with one by it."""
    return _walked(args, ints, values), tuple(sorted((name, _walked(v, ints, values)) for name, v in kwargs.items()))


def _walked(v, ints, values):
    """The signature of one value (with `ints`, an int's kind in place of its value: jit stages
    the arguments' ints), appending its staged leaves to `values`. A Box is a leaf (flatten does
    not open it); its key is that of what it holds, and an int another stage traces is "i", an
    input of the recording rather than a constant."""
    t = type(v)
    if t is Box:
        values.append(v)
        inside = peek(v)
        return "i" if type(inside) is int else _walked(inside, ints, [])
    if t is float or t is np.float64 or t is np.ndarray:
        values.append(v)
        return "f" if t is not np.ndarray else ("t", v.shape, v.dtype.str)
    if t is int and ints:
        values.append(v)
        return "i"
    if t is int or t is bool or t is str or v is None:
        return (t.__name__, v)
    if t is tuple:
        return ("tuple", *(_walked(x, ints, values) for x in v))
    if t is dict:
        return ("map", *((type(name).__name__, name, _walked(x, ints, values)) for name, x in v.items()))
    if t is Struct:
        return ("struct", id(v.sdef), v.sdef, *(_walked(x, ints, values) for x in v.vals))
    return ("object", id(v), v)        # functions, modules, struct types: by identity


def _key(v, ints=False):
    """The signature of one value (see _walked)."""
    return _walked(v, ints, [])


def changed_leaf(old, new):
    """Where two signatures first differ, in words: 'arg 1 ["step"]: int 1 -> 2'."""
    if old is None:
        return "its first"
    if len(old[0]) != len(new[0]):      # (each call's positional arguments are one tuple's key)
        return f"the number of positional arguments: {len(old[0]) - 1} -> {len(new[0]) - 1}"
    names = [[name for name, _ in side[1]] for side in (old, new)]
    if names[0] != names[1]:
        was, now = (", ".join(n) or "none" for n in names)
        return f"the keyword arguments: {was} -> {now}"
    found = _first_change(old[0], new[0], "") or _keyword_change(old[1], new[1])
    if found is None:
        if old[2:] != new[2:]:      # the ints whose values the recordings depend on (Jitted.pinned)
            was, now = old[2] if old[2:] else (), new[2] if new[2:] else ()
            return f"an int the recording depends on: {', '.join(map(str, was))} -> {', '.join(map(str, now))}"
        return "the same signature"
    path, a, b = found
    return f"{path or 'the arguments'}: {_leaf_words(a)} -> {_leaf_words(b)}"


def _keyword_change(old, new):
    """_first_change over the keyword arguments of two calls that name the same ones."""
    for (name, x), (_, y) in zip(old, new):
        found = _first_change(x, y, f"keyword {name}")
        if found:
            return found
    return None


def _first_change(a, b, path):
    """(path, old leaf key, new leaf key) of the first difference of two keys, or None."""
    if a == b:
        return None
    if type(a) is tuple and type(b) is tuple and a and b and a[0] == b[0] and len(a) == len(b):
        if a[0] == "tuple":
            for i, (x, y) in enumerate(zip(a[1:], b[1:])):
                found = _first_change(x, y, f"arg {i}" if path == "" else f"{path}[{i}]")
                if found:
                    return found
        elif a[0] == "map" and [k[:2] for k in a[1:]] == [k[:2] for k in b[1:]]:
            for (_, k, x), (_, _, y) in zip(a[1:], b[1:]):
                found = _first_change(x, y, f"{path} [{show(k, nested=True)}]")
                if found:
                    return found
        elif a[0] == "struct" and a[1] == b[1]:
            for name, x, y in zip(a[2].fields, a[3:], b[3:]):
                found = _first_change(x, y, f"{path}.{name}")
                if found:
                    return found
    return path, a, b


def _leaf_words(k):
    """A signature's leaf key in words."""
    if k == "f":
        return "a float"
    if k == "i":
        return "an int"
    if type(k) is tuple and k and k[0] == "t":
        return f"a tensor of shape {tuple(k[1])}"
    if type(k) is tuple and len(k) == 2 and k[0] in ("int", "bool", "str", "NoneType"):
        v = k[1]
        return {"int": f"int {v}", "bool": f"{str(v).lower()}", "str": f'string "{v}"',
                "NoneType": "none"}[k[0]]
    if type(k) is tuple and k and k[0] == "tuple":
        return f"a tuple of {len(k) - 1}"
    if type(k) is tuple and k and k[0] == "map":
        return "a map of " + (", ".join(show(entry[1], nested=True) for entry in k[1:]) or "no keys")
    if type(k) is tuple and k and k[0] == "struct":
        return f"a {k[2].name}"
    return "a value of another kind"
