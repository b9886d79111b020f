"""Reading and updating structs, maps, tuples and tensors: `p.w`, `m[k]`, `t[i]`,
and their value-semantics updates. Reading a field, key or element of a
recorded structure records StructField or MapLookup with its slot index."""

import numpy as np

from ...base.cells import UNBOUND
from ..printing import show
from ..tape import Box, peek, raw
from ..values import Module, Struct
from .arith import add, mul, sub
from .compare import eq, logical_and, order
from .core import a_type_name, error, ndarray, type_name
from .dtypes import astype
from .shape import (index as tensor_index, index_array, make_key, moveaxis, reshape, row, rows, set_index, set_row,
                    set_rows)
from .slots import map_slot, struct_slot, unpack
from .take import put, staged_index, take, take_at

MAP_KEY_TYPES = (str, int, bool)


# ---------------------------------------------------------------- p.name
def field(obj, name):
    """obj.name: a struct's field or a module's top-level name."""
    t = type(obj)
    if t is Struct:
        i = obj.sdef.index.get(name)
        if i is not None:
            return obj.vals[i]
    elif t is Box and type(v := peek(obj)) is Struct:
        sdef = v.sdef
        i = sdef.index.get(name)
        if i is not None:
            return struct_slot(obj, i, len(sdef.fields), name)
        obj = v
    elif t is Module:
        cell = obj.cells.get(name)
        if cell is None or cell.v is UNBOUND:
            raise error("name", f"the module {obj.name} has no name '{name}'")
        return cell.v
    else:
        raise error("type", f"cannot read the field '{name}' of {a_type_name(obj)}"
                            + (" (fields belong to structs; use m[\"key\"] for maps)"
                               if type(peek(obj)) is dict else ""))
    raise error("key", f"{obj.sdef.name} has no field '{name}' "
                       f"(its fields are {', '.join(obj.sdef.fields) or 'none'})")


def set_field(obj, name, value):
    """A copy of struct `obj` with field `name` replaced."""
    s = unpack(obj)
    if type(s) is not Struct:
        raise error("type", f"cannot set the field '{name}' of {a_type_name(obj)}")
    i = s.sdef.index.get(name)
    if i is None:
        raise error("key", f"{s.sdef.name} has no field '{name}' "
                           f"(its fields are {', '.join(s.sdef.fields) or 'none'})")
    vals = list(s.vals)
    vals[i] = value
    return Struct(s.sdef, vals)


# ---------------------------------------------------------------- x[k]
def item(obj, subs):
    """obj[subs...] for tensors, tuples, maps, strings and ranges."""
    v = peek(obj)
    t = type(v)
    if t is ndarray:
        if v.ndim == 0:
            raise error("index", "cannot index a tensor with no axes (shape ())")
        if len(subs) == 1 and type(subs[0]) is int and -v.shape[0] <= subs[0] < v.shape[0]:
            return tensor_index(obj, (subs[0],))       # x[i]: the common case, without make_key's generality
        if len(subs) == 1 and _staged_int(subs[0]):
            return row(obj, subs[0])        # an int being staged (a rolled loop's variable): no guard
        if any(type(s) is Box or type(s) is slice and type(s.start) is Box for s in subs):
            out = _staged_read(obj, v, subs)        # (plain subscripts, the common case, skip the looks)
            if out is not None:
                return out
            subs = _plain(subs)
        key = make_key(v.shape, [raw(s) for s in subs])
        # an index tensor makes x[idx] a gather (reference 4), recorded under reference 6.3's GatherOp
        gathers = any(type(k) is ndarray and k.dtype.kind != "b" for k in key)
        return tensor_index(obj, key, op="GatherOp" if gathers else "Index")
    if len(subs) != 1:
        raise error("index", f"{a_type_name(v)} takes one index, got {len(subs)}")
    key = raw(_plain(subs)[0])
    if t is dict:
        if type(key) not in MAP_KEY_TYPES:
            raise error("type", f"map keys are strings, ints or bools, not {type_name(key)}")
        if key not in v:
            raise error("key", f"the map has no key {_show_key(key)}", hint=_keys_hint(v))
        if type(obj) is Box:
            return map_slot(obj, _position(v, key), len(v), key)
        return v[key]
    if t is str and type(obj) is Box:      # an f-string jit stages: its text is read, and guarded
        obj = v = raw(obj)
    if t is tuple or t is str or t is range:
        if type(key) is slice:
            if type(obj) is Box:
                return tuple(unpack(obj)[key])
            return v[key]
        i = _seq_index(key, len(v), v)
        if type(obj) is Box:
            return struct_slot(obj, i, len(v), i)
        return v[i]
    raise error("type", f"cannot index {a_type_name(v)}")


def _staged_read(obj, v, subs):
    """obj[subs] where a subscript is being staged (a loop's variable, an index tensor the program
    computes) and it can be read without a guard on its value; else None (make_key guards)."""
    subs = _spelled_out(v, subs)
    at = _staged_take(v, subs)
    if at is not None:      # x[idx], x[:, idx] for positions the program computes: no guard on them
        return take_at(obj, subs[at], at)
    at = _staged_rows(v, subs)
    if at is not None:      # x[i:i + 3], x[:, i:i + 3]: n rows from i (along that axis), then the rest
        out = moveaxis(rows(moveaxis(obj, at, 0), subs[at].start, _rows_guarded(v, subs[at], at)), 0, at)
        rest = subs[:at] + (slice(None),) + subs[at + 1:]
        return out if all(_full(s) for s in rest) else item(out, rest)
    lead = _staged_lead(v, subs)
    if lead:        # x[i, j], x[i, 1:3] with i or j a loop's variable: row by row, then the rest
        out = obj
        for s in subs[:lead]:
            out = item(out, (s,))
        return item(out, subs[lead:]) if lead < len(subs) else out
    at = _staged_column(v, subs)
    if at:          # x[:, j]: the axis j indexes moved to the front, then its row j
        return item(moveaxis(obj, at, 0), (subs[at],) + tuple(subs[:at]) + tuple(subs[at + 1:]))
    flat = _staged_block(v, subs)
    if flat is not None:        # x[arange(n), y] with y computed by the program: one gather, no guard
        a, b, positions = flat
        joined = reshape(obj, v.shape[:a] + (int(np.prod(v.shape[a:b])),) + v.shape[b:])
        return take_at(joined, positions, a)
    return None


def _staged_lead(v, subs):
    """How many ints lead the subscripts of tensor `v` where an int or a slice among them is being
    staged (a rolled loop's variable) and the others are basic (ints, slices, none, ...), or index
    tensors right after the ints: each leading int takes a row, as numpy's x[0, i, 1:3] is
    x[0][i][1:3] and x[i, idx] is x[i][idx]; 0 where that does not hold (an index tensor further
    on would place its axes differently), and the subscripts go to make_key, which guards."""
    k = 0
    while k < len(subs) and (type(subs[k]) is int or _staged_int(subs[k])):
        k += 1
    if k == 0 or len(subs) < 2 or k > v.ndim or (k < len(subs) and k == v.ndim):
        return 0
    if not any(_staged_int(s) or _staged_slice(s) for s in subs):
        return 0
    rest = subs[k:]
    tensors = 0
    while tensors < len(rest) and not _basic(rest[tensors:tensors + 1]):
        tensors += 1
    return k if _basic(rest[tensors:]) else 0


def _staged_column(v, subs):
    """Where an int being staged follows only slices in the subscripts of tensor `v` (x[:, j],
    x[1:3, :, j]), the rest basic: its position (numpy's x[:, j] is row j of x with that axis
    moved to the front, and each other axis sliced as before); else 0."""
    at = 0
    while at < len(subs) and type(subs[at]) is slice and not _staged_slice(subs[at]):
        at += 1
    if at == 0 or at >= len(subs) or at >= v.ndim or not _staged_int(subs[at]):
        return 0
    return at if _basic(subs[at + 1:]) else 0


def _staged_take(v, subs):
    """Where the one subscript of tensor `v` that is not `:` is an index tensor the program being
    staged computes (x[idx], x[:, idx]: labels, token ids, shuffled positions): its position,
    along which take_at gathers; else None (make_key guards the positions' values)."""
    at = 0
    while at < len(subs) and _full(subs[at]):
        at += 1
    if at >= len(subs) or at >= v.ndim or not staged_index(subs[at]) or not all(_full(s) for s in subs[at + 1:]):
        return None
    return at


def _staged_block(v, subs):
    """Where the subscripts of tensor `v` other than `:` are index tensors and ints side by side,
    one of them an index tensor the program being staged computes (logp[arange(n), y] with y the
    labels passed in): (a, b, positions), the block's axes a to b and the positions in them
    flattened, each subscript's checked (and counted from the end where negative) as numpy's
    x[idx1, idx2] would; else None."""
    if not any(staged_index(s) for s in subs) or len(subs) > v.ndim:
        return None
    block = [k for k, s in enumerate(subs) if not _full(s)]
    a, b = block[0], block[-1] + 1
    if block != list(range(a, b)):
        return None
    positions = None
    for axis in range(a, b):
        s, d = subs[axis], v.shape[axis]
        if staged_index(s):
            p = take(np.arange(float(d)), s)        # checked on each run, negative ones counted from the end
        elif type(s) is int and -d <= s < d:
            p = s % d
        elif type(s) is ndarray and s.dtype.kind in "fi":
            p = index_array(s, d, axis).astype(float) % d
        else:
            return None     # a mask, a staged int, a bad position: make_key guards or says what is wrong
        stride = int(np.prod(v.shape[axis + 1:b]))
        p = mul(p, float(stride)) if stride != 1 else p
        positions = p if positions is None else add(positions, p)
    return a, b, positions


def _staged_rows(v, subs):
    """Where a slice between two ints being staged (x[i:i + 3], x[k * b:(k + 1) * b]) follows only
    slices in the subscripts of tensor `v` and takes rows that are there (numpy would clip a
    slice past the end, and count a negative start from it): its position, whose slice is
    rows(x, i, n) along that axis, the other subscripts then taken as they are (a slice commutes
    with every other subscript); else None (make_key guards the ints' values)."""
    at = 0
    while at < len(subs) and type(subs[at]) is slice and not _staged_slice(subs[at]):
        at += 1
    if at >= len(subs) or at >= v.ndim or not _staged_slice(subs[at]):
        return None
    return at if 0 <= peek(subs[at].start) <= peek(subs[at].stop) <= v.shape[at] else None


def _rows_guarded(v, s, at):
    """The number of rows slice `s` takes along axis `at` of `v` on this call, with the guard that
    each run of the program takes as many from a start within the axis (a rolled loop's later
    iterations: one that does not is written out, as a guard on the ints would have written all)."""
    n = peek(s.stop) - peek(s.start)
    raw(logical_and(logical_and(order(">=", s.start, 0), eq(sub(s.stop, s.start), n)),
                    order("<=", s.stop, v.shape[at])))
    return n


def _spelled_out(v, subs):
    """The subscripts of tensor `v` with `...` written as the full slices it stands for, where one
    of them is being staged and all are basic (x[..., j] is x[:, :, j], a column); else as given."""
    if not any(s is Ellipsis for s in subs) or not _basic(subs) or \
            not any(_staged_int(s) or _staged_slice(s) for s in subs):
        return subs
    at = next(k for k, s in enumerate(subs) if s is Ellipsis)
    named = sum(1 for s in subs if s is not None and s is not Ellipsis)
    return tuple(subs[:at]) + (slice(None),) * max(v.ndim - named, 0) + tuple(subs[at + 1:])


def _plain(subs):
    """The subscripts with a slice between ints being staged made one of plain ints, each guarded
    (runtime.compiler.compile_sub leaves such a slice to `_staged_rows`)."""
    if not any(type(s) is slice and type(s.start) is Box for s in subs):
        return subs
    return tuple(slice(raw(s.start), raw(s.stop)) if type(s) is slice and type(s.start) is Box else s for s in subs)


def _staged_slice(s):
    """Whether a subscript is a slice whose bounds are both ints being staged, of no step."""
    return type(s) is slice and s.step is None and _staged_int(s.start) and _staged_int(s.stop)


def _full(s):
    """Whether a subscript is `:`."""
    return type(s) is slice and s.start is None and s.stop is None and s.step is None


def _basic(subs):
    """Whether subscripts are basic ones (ints, staged ones too, slices of plain bounds, none, ...):
    no index tensor, which would place its axes otherwise after the ints taken row by row."""
    for s in subs:
        if type(s) is slice:
            if any(type(p) is Box for p in (s.start, s.stop, s.step)) and not _staged_slice(s):
                return False
        elif not (s is None or s is Ellipsis or type(s) is int or _staged_int(s)):
            return False
    return True


def _staged_int(s):
    """Whether a subscript is an int being staged (a rolled loop's variable)."""
    return type(s) is Box and type(peek(s)) is int


def set_item(obj, subs, value):
    """A copy of `obj` with obj[subs] = value (maps may gain a key)."""
    v = peek(obj)
    t = type(v)
    if t is ndarray:
        if v.ndim == 0:
            raise error("index", "cannot index a tensor with no axes (shape ())")
        val = peek(value)
        if type(val) not in (float, int, bool, ndarray) and not isinstance(val, np.generic):
            raise error("type", f"cannot store {a_type_name(val)} in a tensor")
        if len(subs) == 1 and _staged_int(subs[0]):
            return set_row(obj, subs[0], value)     # an int being staged (a rolled loop's variable): no guard
        if any(type(s) is Box or type(s) is slice and type(s.start) is Box for s in subs):
            out = _staged_write(obj, v, subs, value)        # (plain subscripts skip the looks)
            if out is not None:
                return out
            subs = _plain(subs)
        return set_index(obj, make_key(v.shape, [raw(s) for s in subs]), value)
    if len(subs) != 1:
        raise error("index", f"{a_type_name(v)} takes one index, got {len(subs)}")
    key = raw(_plain(subs)[0])
    if t is dict:
        if type(key) not in MAP_KEY_TYPES:
            raise error("type", f"map keys are strings, ints or bools, not {type_name(key)}")
        m = dict(unpack(obj))
        m[key] = value
        return m
    if t is tuple:
        i = _seq_index(key, len(v), v)
        items = list(unpack(obj))
        items[i] = value
        return tuple(items)
    raise error("type", f"cannot assign to an element of {a_type_name(v)}")


def _staged_write(obj, v, subs, value):
    """A copy of obj with obj[subs] = value where a subscript is being staged and the write needs no
    guard on its value (as _staged_read reads); else None."""
    subs = _spelled_out(v, subs)
    at = _staged_rows(v, subs)
    if at is not None:      # x[i:i + 3] = v: those rows set (through the rest of the subscripts)
        start = subs[at].start
        n = _rows_guarded(v, subs[at], at)
        moved = moveaxis(obj, at, 0)
        rest = subs[:at] + (slice(None),) + subs[at + 1:]
        if at or not all(_full(s) for s in rest):
            value = moveaxis(set_item(moveaxis(rows(moved, start, n), 0, at), rest, value), at, 0)
        return moveaxis(set_rows(moved, start, value, n), 0, at)
    if _staged_lead(v, subs):     # x[i, j] = v: row i with its entry j set, written back as row i
        return set_item(obj, subs[:1], set_item(item(obj, subs[:1]), subs[1:], value))
    at = _staged_column(v, subs)
    if at:          # x[:, j] = v: written as row j with that axis in front, then moved back
        moved = set_item(moveaxis(obj, at, 0), (subs[at],) + tuple(subs[:at]) + tuple(subs[at + 1:]), value)
        return moveaxis(moved, 0, at)
    at = _staged_take(v, subs)
    if at is not None and _puts(v, value, subs[at]):    # x[idx] = v, x[:, idx] = v at positions the program computes
        if type(peek(value)) in (float, int):       # a number stored takes the tensor's type
            value = astype(float(value) if type(value) is int else value, v.dtype)
        return put(obj, subs[at], value, at)
    return None


FLOATS = (np.dtype(np.float32), np.dtype(np.float64))


def _puts(v, value, idx):
    """Whether x[idx] = value may be written without a guard on the positions (ops.put): a float32
    or float64 tensor given a number or a tensor of those types, at one position at least (a
    write of none is numpy's to check)."""
    val = peek(value)
    return v.dtype in FLOATS and np.size(peek(idx)) > 0 and (
        type(val) in (float, int) or (type(val) is ndarray and val.dtype in FLOATS))


def _seq_index(key, n, seq):
    """Check an int index into sequence `seq` of length n; return it non-negative."""
    if type(key) is float and key.is_integer():
        key = int(key)
    if type(key) is not int:
        raise error("type", f"a {type_name(seq)} index must be an int, got {type_name(key)}")
    if not -n <= key < n:
        raise error("index", f"index {key} is out of range for a {type_name(seq)} of length {n}")
    return key % n


def _position(m, key):
    """The insertion-order position of `key` in map `m`."""
    for i, k in enumerate(m):
        if k == key and type(k) is type(key):
            return i
    return list(m).index(key)


def _show_key(key):
    """A key as dg would write it."""
    return show(key, nested=True)


def _keys_hint(m):
    """List a map's keys for an error message."""
    keys = list(m)
    if not keys:
        return "the map is empty"
    shown = ", ".join(_show_key(k) for k in keys[:8])
    return f"its keys are {shown}{', ...' if len(keys) > 8 else ''}"
