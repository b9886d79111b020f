"""Tree builtins: tree_map, tree_leaves, global_norm, clip_by_global_norm.

A tree is any nesting of tuples, maps and structs. Where a tree holds none
at a leaf (a gradient's non-differentiable slot), tree_map passes the first
tree's leaf through unchanged, so optimizers leave ints and strings alone.
"""

from ...core import ops
from ...core.printing import show
from ...core.tape import Box, peek, raw
from ...core.trees import children, is_container, rebuild
from ...core.values import Struct, call, is_callable_value, type_name
from ...errors import error


def _open(v):
    """A (possibly recorded) container as a plain one whose leaves are recorded reads."""
    return ops.unpack(v) if type(v) is Box else v


def _outline(v):
    """A container's kind with what tells two of its kind apart (keys, length), for tree_map's error."""
    if type(v) is dict:
        return f"a map with keys {show(tuple(v))}"        # a tuple's text: one key shows as ("a",)
    if type(v) is tuple:
        return f"a tuple of length {len(v)}"
    return type_name(v)


def tree_map(f, tree, *more):
    """tree_map(f, tree, *more_trees): f applied leaf by leaf, the result shaped like tree."""
    if not is_callable_value(f):
        raise error("type", f"tree_map needs a function as its first argument, got {type_name(f)}")
    def walk(t, others, path):
        rt = peek(t)
        if is_container(rt):
            t = _open(t)
            kids = children(t)
            other_kids = []
            for o in others:
                ro = peek(o)
                if type(ro) is not type(rt) or len(children(ro)) != len(kids) or (
                        type(ro) is dict and list(ro) != list(rt)) or (
                        type(ro) is Struct and ro.sdef is not rt.sdef):     # P(1.0) != Q(1.0) too
                    raise error("value", f"tree_map: the trees differ in structure at {_path_text(path)} "
                                         f"({_outline(rt)} vs {_outline(ro)})")
                other_kids.append(children(_open(o)))
            # the path is a chain (parent, index), written out only for an error: a string per
            # level would cost memory quadratic in the depth
            return rebuild(t, [walk(k, [ok[i] for ok in other_kids], (path, i))
                               for i, k in enumerate(kids)])
        if any(peek(o) is None for o in others) or rt is None:
            return t
        return call(f, (t, *others))
    return walk(tree, list(more), None)


def _path_text(path):
    """A chain of (parent, index) as [0][2]..., or 'the root'."""
    steps = []
    while path is not None:
        path, i = path
        steps.append(f"[{i}]")
    return "".join(reversed(steps)) or "the root"


def tree_leaves(tree):
    """tree_leaves(tree): the leaves in order, as a tuple (none leaves are skipped)."""
    out = []
    stack = [tree]
    while stack:
        t = stack.pop()
        if is_container(peek(t)):
            stack.extend(reversed(children(_open(t))))
        elif peek(t) is not None:
            out.append(t)
    return tuple(out)


def global_norm(tree):
    """global_norm(tree): the L2 norm over every float leaf of the tree."""
    total = 0.0
    for leaf in tree_leaves(tree):
        if _counted(leaf):
            total = ops.add(total, ops.sum_(ops.mul(leaf, leaf)))
    return ops.sqrt(total)


def _counted(leaf):
    """Whether a leaf counts in global_norm (numbers and tensors; not bools, strings or none)."""
    v = peek(leaf)      # its type only: reading the value would make jit guard it
    return type(v) in (int, float) or hasattr(v, "dtype") and v.dtype.kind in "iufc"


def clip_by_global_norm(tree, max):     # noqa: A002  (the reference names the parameter `max`)
    """clip_by_global_norm(tree, max): (tree scaled so its global norm is at most max, the norm before)."""
    limit = raw(max)
    if type(limit) not in (int, float):
        raise error("type", f"clip_by_global_norm needs a non-negative number, got {type_name(limit)}")
    if limit < 0:   # a number of the right kind but a bad value: reference 7 calls that a value error
        raise error("value", f"clip_by_global_norm needs a non-negative max, got {limit!r}")
    norm = global_norm(tree)
    if type(norm) is Box and not any(type(peek(x)) is int for x in tree_leaves(tree)):
        # traced (jit, grad): chosen by where, so that jit does not guard the norm and stage the
        # step again each time the clipping starts or stops; the same numbers either way (an int
        # leaf, kept an int where not clipped, keeps the guard)
        under = ops.order("<=", norm, limit)
        safe = ops.where(under, 1.0, norm)
        return tree_map(lambda x: ops.where(under, x, _scaled(x, safe, limit)) if _counted(x) else x, tree), norm
    if ops.truth(ops.order("<=", norm, limit)):
        return tree, norm
    return tree_map(lambda x: _scaled(x, norm, limit) if _counted(x) else x, tree), norm


def _scaled(x, norm, limit):
    """(x / norm) * max, as optax does, so hand-checked results come out exact: (3, 4) -> (0.6, 0.8);
    every leaf the norm counted is scaled (an int too, which becomes a float): the result's norm is max."""
    return ops.mul(ops.div(x, norm), float(limit))


BUILTINS = {"tree_map": tree_map, "tree_leaves": tree_leaves, "global_norm": global_norm,
            "clip_by_global_norm": clip_by_global_norm}
