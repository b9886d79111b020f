"""How dg values print (reference section 3): `print`, `str`, f-strings and the REPL echo."""

import numpy as np

from ..errors import error
from .tape import raw

LINE_WIDTH = 80          # a tensor whose one-line form is longer prints a row per line
ELIDE_OVER = 1000        # tensors with more elements print with `...`
EDGE = 3                 # elements kept at each end of an elided axis
MAX_FORMAT_WIDTH = 10_000   # an f-string width or precision beyond this is a memory bomb, not a format


def show(v, nested=False):
    """The text of a value: strings bare at the top level, quoted inside containers."""
    v = raw(v)
    t = type(v)
    if t is str:
        return quote(v) if nested else v
    if t is bool or t is np.bool_:
        return "true" if v else "false"
    if v is None:
        return "none"
    if t is int:
        if v.bit_length() > 14_000:     # near Python's 4300-digit limit on int -> text
            return _long_int(v)
        return str(v)
    if t is float or t is np.float64:
        return repr(float(v))
    if t is np.ndarray:
        return show_tensor(v)
    if t is tuple:
        if len(v) == 1:
            return f"({show(v[0], True)},)"
        return "(" + ", ".join(show(x, True) for x in v) + ")"
    if t is dict:
        return "{" + ", ".join(f"{show(k, True)}: {show(x, True)}" for k, x in v.items()) + "}"
    text = getattr(v, "dg_text", None)     # structs, struct types, functions, modules (values.py)
    if text is not None:
        return text(lambda x: show(x, True))
    if t is range:
        return repr(v)
    if getattr(v, "dg_iterable", False):
        return "<iterator>"
    if callable(v):
        name = getattr(v, 'name', None) or getattr(v, '__name__', 'builtin')
        return f"<fn {name.rstrip('_') or name}>"      # builtins like len_ are dg's len
    return f"<{t.__name__}>"


def _long_int(v):
    """An int past Python's 4300-digit conversion limit: a `value` error, as in Python."""
    try:
        return str(v)
    except ValueError:
        raise error("value", f"an int of about {int(v.bit_length() * 0.30103):,} digits is too long to "
                             "show as text (Python's limit is 4300 digits); float(x) shows its size") from None


def quote(s):
    """A string as a dg literal: double quotes and dg's escapes."""
    body = (s.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
            .replace("\t", "\\t").replace("\r", "\\r").replace("\0", "\\0"))
    return f'"{body}"'


def _element(x, fmt=None):
    """One tensor element."""
    if isinstance(x, (bool, np.bool_)):
        return "true" if x else "false"
    if isinstance(x, np.integer):       # an int tensor's entries print as ints
        return format(int(x), fmt) if fmt is not None else str(int(x))
    if fmt is not None:
        return format(float(x), fmt)
    if type(x) is np.float32 or type(x) is np.float16:
        return str(x)                   # the shortest text that reads back in that type: 0.1, not 0.100000001
    return repr(float(x))


def show_tensor(a, fmt=None):
    """A tensor like its bracket literal; rows on separate lines when one line is too long."""
    if a.ndim == 0:
        return _element(a[()], fmt)     # a numpy scalar: an int tensor's prints as an int
    keep = _kept_per_axis(a.shape) if a.size > ELIDE_OVER else None
    one_line = _nest(a, keep, fmt, None, 0)
    if len(one_line) <= LINE_WIDTH or a.ndim == 1:
        return one_line
    return _nest(a, keep, fmt, "\n", 0)


def _kept_per_axis(shape):
    """How many leading (and as many trailing) entries of each axis an elided tensor shows.

    EDGE at each end of a long axis, as numpy does; and, where that still shows more than
    ELIDE_OVER elements (many short axes: shape (2,) * 25), the outer axes show their first
    entry only, so that the text stays small whatever the shape."""
    keep = [n if n <= 2 * EDGE else EDGE for n in shape]
    shown = 1
    for n, k in zip(shape, keep):
        shown *= n if k == n else 2 * k
    for axis, n in enumerate(shape):
        if shown <= ELIDE_OVER:
            break
        if n > 1:
            shown //= n if keep[axis] == n else 2 * keep[axis]
            keep[axis] = 0      # the first entry, then `...`
    return keep


def _nest(a, keep, fmt, sep, depth):
    """Render the nested brackets of `a`, breaking lines between rows when sep is '\\n'."""
    if a.ndim == 1:
        items = _cut([_element(x, fmt) for x in _ends(a, keep, depth)], a.shape[0], keep, depth)
        return "[" + ", ".join(items) + "]"
    parts = _cut([_nest(row, keep, fmt, sep, depth + 1) for row in _ends(a, keep, depth)], a.shape[0], keep, depth)
    if sep is None:
        return "[" + ", ".join(parts) + "]"
    gap = "," + "\n" * (a.ndim - 1) + " " * (depth + 1)
    return "[" + gap.join(parts) + "]"


def _ends(a, keep, depth):
    """The entries of `a`'s first axis that are shown."""
    if keep is None or keep[depth] >= a.shape[0]:
        return list(a)
    k = keep[depth]
    return [a[0]] if k == 0 else list(a[:k]) + list(a[-k:])


def _cut(items, n, keep, depth):
    """Insert `...` where an axis's entries are left out."""
    if keep is None or keep[depth] >= n:
        return items
    k = keep[depth]
    return items + ["..."] if k == 0 else items[:k] + ["..."] + items[k:]


def display_tensor(a):
    """A tensor as the REPL shows it, the way numpy users read one: its shape on the first line,
    then the entries aligned in columns to 8 significant digits, elided beyond about a thousand
    (print and str give every digit)."""
    v = raw(a)
    body = np.array2string(v, separator=", ", precision=8, max_line_width=LINE_WIDTH, threshold=ELIDE_OVER,
                           edgeitems=EDGE, formatter={"bool": lambda b: "true" if b else "false"})
    kind = "" if v.dtype == np.float64 else " " + v.dtype.name
    shape = "(" + ", ".join(str(n) for n in v.shape) + ("," if v.ndim == 1 else "") + ")"
    return f"tensor{kind} {shape}\n{body}"
