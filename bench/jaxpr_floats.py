"""JAX's own staged program of a derivative, run as straight-line Python on floats: the floor
of what any Python code generator pays for that program (bench/third.py's later-calls row).

`python_of(closed_jaxpr)` writes one Python line per operation of the jaxpr, each scan as a
Python for loop over its rows with its body inlined (as dg's numpy jit writes a loop), after
merging operations that repeat within a body (XLA's common-subexpression elimination: JAX's
jaxpr of a third derivative computes sin and cos of the same value several times). What it
runs is linearize + transpose's own program, so the ratio of two such programs' times is what
that method costs per derivative order when each operation is a Python operation."""

import math

_BINARY = {"add": "+", "add_any": "+", "sub": "-", "mul": "*", "div": "/"}
_UNARY = {"sin": "_sin({})", "cos": "_cos({})", "neg": "(-{})", "exp": "_exp({})"}


class _Writer:
    """Lines and fresh names for the generated function."""

    def __init__(self):
        self.lines, self.count = [], 0

    def fresh(self):
        """A new local name."""
        self.count += 1
        return f"v{self.count}"


def python_of(closed):
    """A Python function of the jaxpr's inputs (floats, ints) returning the tuple of its outputs:
    lists for what the jaxpr stacks (a scan's ys)."""
    w = _Writer()
    jaxpr = closed.jaxpr
    names = {}
    params = [_bind(w, names, v) for v in jaxpr.invars]
    for v, c in zip(jaxpr.constvars, closed.consts):
        names[v] = repr(float(c))
    _body(w, jaxpr.eqns, names, "    ")
    outs = ", ".join(_read(names, v) for v in jaxpr.outvars)
    source = f"def run({', '.join(params)}):\n" + "".join(w.lines) + f"    return ({outs},)\n"
    namespace = {"_sin": math.sin, "_cos": math.cos, "_exp": math.exp}
    exec(compile(source, "<jaxpr as Python>", "exec"), namespace)
    return namespace["run"]


def _bind(w, names, var):
    """A new Python name for a jaxpr variable."""
    names[var] = w.fresh()
    return names[var]


def _read(names, atom):
    """The Python expression of a variable or a literal."""
    if hasattr(atom, "val"):
        return repr(float(atom.val)) if "float" in str(atom.aval.dtype) else repr(int(atom.val))
    return names[atom]


def _body(w, eqns, names, indent):
    """The lines of a list of equations, repeated ones merged."""
    seen = {}
    for e in eqns:
        name = e.primitive.name
        args = [_read(names, a) for a in e.invars]
        if name == "scan":
            _scan(w, e, args, names, indent)
            continue
        key = (name, tuple(args))
        if key in seen:
            names[e.outvars[0]] = seen[key]
            continue
        if name in _BINARY and e.outvars[0].aval.shape:      # two stacked ys (lists), entry by entry
            expr = f"[_a {_BINARY[name]} _b for _a, _b in zip({args[0]}, {args[1]})]"
        elif name in _BINARY:
            expr = f"({args[0]} {_BINARY[name]} {args[1]})"
        elif name in _UNARY:
            expr = _UNARY[name].format(args[0])
        else:
            raise NotImplementedError(f"jaxpr_floats has no line for {name}")
        out = seen[key] = _bind(w, names, e.outvars[0])
        w.lines.append(f"{indent}{out} = {expr}\n")


def _consts_and_carry(ft_in):
    """JAX 0.11's scan names its inputs' (consts, carry, xs) as one flat tree (jax._src.flattree):
    how many consts and carry values it has."""
    consts, carry, _ = ft_in.unpack()
    return len(consts), len(carry)


def _scan(w, e, args, names, indent):
    """A scan as a for loop: consts, then carry, then xs (tuples), its ys gathered in lists."""
    p = e.params
    nk, nc = (p["num_consts"], p["num_carry"]) if "num_consts" in p else _consts_and_carry(p["ft_in"])
    body = p["jaxpr"].jaxpr
    consts, init, xs = args[:nk], args[nk:nk + nc], args[nk + nc:]
    inner = {}
    for v, a in zip(body.invars[:nk], consts):
        inner[v] = a
    carry = [_bind(w, inner, v) for v in body.invars[nk:nk + nc]]
    rows = [_bind(w, inner, v) for v in body.invars[nk + nc:]]
    for c, a in zip(carry, init):
        w.lines.append(f"{indent}{c} = {a}\n")
    ny = len(body.outvars) - nc
    ys = [w.fresh() for _ in range(ny)]
    for y in ys:
        w.lines.append(f"{indent}{y} = []\n")
    order = (lambda s: f"reversed({s})") if p["reverse"] else (lambda s: s)
    if xs:
        head = f"for ({''.join(r + ', ' for r in rows)}) in zip({', '.join(order(x) for x in xs)}):"
    else:
        head = f"for _ in range({p['length']}):"
    w.lines.append(f"{indent}{head}\n")
    _body(w, body.eqns, inner, indent + "    ")
    outs = [_read(inner, v) for v in body.outvars]
    for y, o in zip(ys, outs[nc:]):
        w.lines.append(f"{indent}    {y}.append({o})\n")
    w.lines.append(f"{indent}    {', '.join(carry)}, = {', '.join(outs[:nc])},\n")
    if p["reverse"]:
        for y in ys:
            w.lines.append(f"{indent}{y}.reverse()\n")
    for v, c in zip(e.outvars[:nc], carry):
        names[v] = c
    for v, y in zip(e.outvars[nc:], ys):
        names[v] = y
