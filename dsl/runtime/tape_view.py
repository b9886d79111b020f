"""Showing a tape: the nodes of a gradient computation as rows, as text, and as Graphviz DOT.

A tape is the list of `Box` nodes of one trace, in creation order (the REPL's
`:tape`, `Interpreter.tape()`, `Interpreter.last_tape`). Each row gives a
node's index, its GradOp name, the indices of its recorded inputs, the type
and shape of its value, its source location, and the detail that tells which
slot a StructField/MapLookup read.
"""

from dataclasses import dataclass

import numpy as np

from ..core.printing import quote
from ..core.stage import Node, is_array_kind
from ..core.tape import peek
from ..core.values import type_name


@dataclass(frozen=True)
class TapeRow:
    """One tape node, as plain data."""

    index: int
    op: str
    inputs: tuple        # the index of each recorded input; None for a constant argument
    type: str            # "tensor", "float", a struct's name, "map", ...
    shape: tuple         # the tensor's shape, () for a number, None for other values
    location: str        # "file:line:column", or "" when unknown
    detail: str          # e.g. 'field w (0 of 2)', 'key "hidden" (1 of 2)', 'argument 0'


def tape_rows(nodes):
    """The rows of a tape (an empty list when there is none)."""
    nodes = list(nodes or ())
    position = {id(n): i for i, n in enumerate(nodes)}
    rows = []
    for i, node in enumerate(nodes):
        inputs = tuple(None if p is None else position.get(id(p)) for p in node.parents)
        kind, shape = _staged_kind(node.v) if type(node) is Node and node.op != "Guard" else _kind_and_shape(node.v)
        where = node.span.where() if node.span is not None else ""
        rows.append(TapeRow(i, node.op, inputs, kind, shape, where, _detail(node)))
    return rows


def _staged_kind(kind):
    """A staged step's type name and shape, from the kind its stage noted (stage.kind_of)."""
    if is_array_kind(kind):
        return "tensor", tuple(kind[3])
    if kind in ("float", "int", "bool"):
        return kind, ()
    return {"str": "string"}.get(kind, "value"), None


def _kind_and_shape(value):
    """The type name of a node's value and its shape (tensors and numbers only)."""
    v = peek(value)
    if type(v) is np.ndarray:
        return "tensor", tuple(v.shape)
    name = type_name(v)
    if name in ("float", "int", "bool"):
        return name, ()
    return name, None


def _detail(node):
    """What distinguishes this node beyond its op: the slot it reads, its argument, its options."""
    kw = node.kw or {}
    if node.op == "StructField":
        name = kw.get("name")
        label = f"field {name}" if isinstance(name, str) else f"element {name}"
        return f"{label} ({kw['field_index']} of {kw['total_fields']})"
    if node.op == "MapLookup":
        key = kw.get("key")
        shown = quote(key) if isinstance(key, str) else str(key).lower() if isinstance(key, bool) else str(key)
        return f"key {shown} ({kw['key_index']} of {kw['total_keys']})"
    if node.op in ("Parameter", "Input") and "argnum" in kw:
        return f"argument {kw['argnum']}"
    if node.op == "HostCall" and "host" in kw:
        return f"host function {kw['host'].name}"
    simple = [f"{k}={_show_option(v)}" for k, v in kw.items() if _is_simple(v)]
    return ", ".join(simple)


def _is_simple(v):
    """Whether an option is worth showing in one short cell (numbers, strings, int tuples)."""
    if v is None or isinstance(v, (bool, int, float, str)):
        return True
    return isinstance(v, tuple) and len(v) <= 8 and all(isinstance(x, int) for x in v)


def _show_option(v):
    """An option as dg would write it."""
    if v is None:
        return "none"
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, str):
        return quote(v)
    return str(v)


def _shape_text(row):
    """The shape column: `(3, 4)` for tensors, `()` for numbers, the type name otherwise."""
    if row.type == "tensor":
        return "(" + ", ".join(str(d) for d in row.shape) + ("," if len(row.shape) == 1 else "") + ")"
    if row.shape == ():
        return f"{row.type} ()"
    return row.type


def _inputs_text(row):
    """The inputs column: `#0, #3`, with `const` for unrecorded arguments."""
    return ", ".join("const" if i is None else f"#{i}" for i in row.inputs) or "-"


def format_tape(nodes):
    """The tape as an aligned text table, one row per node."""
    rows = tape_rows(nodes)
    if not rows:
        return "the tape is empty"
    header = ("#", "op", "inputs", "shape", "location", "detail")
    cells = [(str(r.index), r.op, _inputs_text(r), _shape_text(r), r.location, r.detail) for r in rows]
    widths = [max(len(header[k]), *(len(c[k]) for c in cells)) for k in range(len(header))]
    lines = []
    for cols in [header] + cells:
        lines.append("  ".join(c.ljust(w) for c, w in zip(cols, widths)).rstrip())
    return "\n".join(lines)


def _dot_escape(text):
    """Text inside a double-quoted DOT string."""
    return text.replace("\\", "\\\\").replace('"', '\\"')


def tape_dot(nodes, name="tape"):
    """The tape as a Graphviz DOT digraph: one box per node, an edge from each input."""
    rows = tape_rows(nodes)
    out = [f'digraph "{_dot_escape(name)}" {{', "  rankdir=TB;", '  node [shape=box, fontname="monospace"];']
    for r in rows:
        parts = [f"#{r.index} {r.op}", _shape_text(r)]
        if r.detail:
            parts.append(r.detail)
        if r.location:
            parts.append(r.location)
        label = "\\n".join(_dot_escape(p) for p in parts)
        style = ", style=filled, fillcolor=lightblue" if r.op == "Parameter" else ""
        out.append(f'  n{r.index} [label="{label}"{style}];')
    for r in rows:
        for slot, i in enumerate(r.inputs):
            if i is not None:
                out.append(f'  n{i} -> n{r.index} [label="{slot}"];')
    out.append("}")
    return "\n".join(out) + "\n"
