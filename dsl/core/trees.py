"""Structured values and their cotangents.

A tree is any nesting of tuples, maps and structs with numbers, tensors and
other values at the leaves. This module turns a structured cotangent (a
`SlotGrad` filled where the program read) into a value shaped like the
primal (zeros for unread float leaves, none for non-differentiable ones), and
flattens trees into leaves and back.
"""

import numpy as np

from .ops.slots import unpack
from .tape import Box, SlotGrad, float_leaf, peek, same_float_dtype, strip_unstaged
from .values import Struct


def is_container(v):
    """Whether a (raw) value is a struct, map or tuple."""
    t = type(v)
    return t is tuple or t is dict or t is Struct


def children(v):
    """The elements of a container, in order."""
    t = type(v)
    if t is Struct:
        return list(v.vals)
    if t is dict:
        return list(v.values())
    return list(v)


def rebuild(template, items):
    """A container like `template` holding `items`."""
    t = type(template)
    if t is Struct:
        return Struct(template.sdef, list(items))
    if t is dict:
        return dict(zip(template.keys(), items))
    return tuple(items)


def is_differentiable_leaf(v):
    """Float and float-tensor leaves get gradients; ints, bools, strings, none and functions do not."""
    return float_leaf(peek(v))


def zero_of(v):
    """The zero cotangent of one leaf: 0.0, zeros of its shape, or none."""
    v = peek(v)
    if type(v) is np.ndarray:
        return np.zeros(v.shape, v.dtype) if v.dtype.kind == "f" else None
    if type(v) is float or type(v) is np.float64:
        return 0.0
    return None


def zero_like_tree(tree):
    """A tree shaped like `tree` with zeros at its float and tensor leaves (none elsewhere)."""
    v = peek(tree)
    if is_container(v):
        return rebuild(v, [zero_like_tree(c) for c in children(v)])
    return zero_of(v)


def to_slotgrad(g):
    """A plain structured cotangent (struct/map/tuple value) as a SlotGrad."""
    if type(g) is SlotGrad:
        return g
    items = children(g)
    sg = SlotGrad(len(items))
    sg.slots = items
    return sg


def cotangent_value(g, primal):
    """Turn cotangent `g` (None, a SlotGrad, or a value) into a value shaped like `primal`.

    Iterative over the structure so that deep nesting cannot overflow the stack.
    """
    pv = peek(primal)
    if type(pv) is np.ndarray and type(g) is np.ndarray and pv.dtype.kind == "f":
        return g if g.dtype is pv.dtype else same_float_dtype(g, pv)   # the common case: a tensor and its gradient
    root = [None]
    stack = [(g, pv, root, 0)]
    built = []      # (primal container, its filled items, where it goes), parents before children
    while stack:
        g, pv, holder, pos = stack.pop()
        if is_container(pv):
            items = children(pv)
            n = len(items)
            if type(g) is SlotGrad:
                slots = g.slots
            elif g is not None and is_container(peek(g)):
                slots = children(peek(g))
            else:
                slots = (None,) * n
            out = [None] * n
            built.append((pv, out, holder, pos))
            for i in range(n):
                stack.append((slots[i], peek(items[i]), out, i))
        elif g is None or not is_differentiable_leaf(pv):
            holder[pos] = zero_of(pv)
        else:
            holder[pos] = g
    for pv, out, holder, pos in reversed(built):     # children are complete before their parents
        holder[pos] = rebuild(pv, out)
    return root[0]


def flatten(tree):
    """Leaves of a tree (boxes count as leaves) and a description to rebuild it."""
    return _flatten(tree, None)


def flatten_open(tree):
    """`flatten`, with recorded containers opened: a Box holding a struct, map or tuple (a
    differentiated argument) is read element by element on its tape (StructField, MapLookup),
    so that its leaves are leaves here (jit and vmap stage leaves, not whole structures)."""
    return _flatten(tree, unpack)


def opened(tree):
    """The tree with its recorded containers opened (see flatten_open): the same values, each
    leaf its own, as a transformation that walks leaves (jvp, jacfwd, vmap) must see them."""
    leaves, spec = flatten_open(tree)
    return unflatten(spec, leaves)


def _flatten(tree, unpack):
    """flatten's walk; `unpack`, when given, opens boxed containers first."""
    leaves = []

    def walk(v):
        if unpack is not None:
            while type(v) is Box and is_container(peek(v)):
                v = unpack(v)
        if type(v) is not Box and is_container(v):
            return (v, [walk(c) for c in children(v)])
        leaves.append(v)
        return None

    spec = walk(tree)
    return leaves, spec


def hollow(spec):
    """A `flatten` description that holds no values: each container in it rebuilt with none for
    its items (a description kept with a program must not keep what the program was made from)."""
    if spec is None:
        return None
    template, kids = spec
    return rebuild(template, [None] * len(kids)), [hollow(k) for k in kids]


def flatten_like(spec, tree):
    """The subtrees of `tree` at the leaf positions of `spec` (a flatten description).

    A None tree gives None for every leaf; a structure mismatch raises ValueError.
    """
    if spec is None:
        return [tree]
    template, kids = spec
    if tree is None:
        return [None] * sum(len(flatten_like(k, None)) for k in kids)
    if type(tree) is Box:
        # a recorded structure (a tangent or cotangent an outer grad differentiates): its items
        # are read on its tape, so that the derivative through them is kept
        while type(tree) is Box and is_container(peek(tree)):
            tree = unpack(tree)
    items = children(tree) if is_container(tree) else None
    if items is None or len(items) != len(kids):
        raise ValueError("structure mismatch")
    out = []
    for k, item in zip(kids, items):
        out += flatten_like(k, item)
    return out


def unflatten(spec, leaves):
    """Rebuild a tree from `flatten`'s description and new leaves."""
    it = iter(leaves)

    def build(s):
        if s is None:
            return next(it)
        template, kids = s
        return rebuild(template, [build(k) for k in kids])

    return build(spec)


def strip(tree):
    """The tree with its reverse and forward boxes removed from every leaf (stop_gradient): no
    derivative flows through it, while jit and vmap still see the value they stage."""
    v = strip_unstaged(tree)
    if is_container(v):
        return rebuild(v, [strip(c) for c in children(v)])
    return v


def contains_box(tree):
    """Whether any leaf of a (plain) tree is boxed."""
    if type(tree) is Box:
        return True
    if is_container(tree):
        return any(contains_box(c) for c in children(tree))
    return False
