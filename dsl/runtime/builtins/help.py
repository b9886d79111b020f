"""help(x): the documentation of a builtin, a dg function, a struct or a module, as text.

A builtin's is its docstring (dsl/runtime/builtins/docs.py). A function written in dg, and a struct, is
documented by its signature and the comment lines right above its definition, as the standard
library is written; a module by the comment at the top of its file. `describe` gives the text
(the REPL's `:doc`, the notebook kernel and the language server use it too).
"""

from ...core.printing import show
from ...core.tape import peek
from ...core.values import Function, Module, StructDef, a_type_name
from ...errors import error
from ...transform.transformed import Transformed
from .docs import DOCS, SECTIONS


def comment_above(span):
    """The comment lines right above the line of `span`, without their `#`, or ''."""
    if span is None or span.source is None:
        return ""
    source = span.source
    k = span.line - 1       # Source.line splits the text once for all its declarations
    found = []
    while k >= 1 and source.line(k).strip().startswith("#"):
        text = source.line(k).strip()[1:].strip()
        if text.startswith("---"):      # a section's banner above the comment: not part of it
            break
        found.append(text)
        k -= 1
    return "\n".join(reversed(found))


def module_comment(module):
    """The comment block at the top of a module's file."""
    try:
        with open(module.path, encoding="utf-8") as fh:
            text = fh.read()
    except (OSError, TypeError):
        return ""
    found = []
    for line in text.split("\n"):
        if not line.strip().startswith("#"):
            break
        found.append(line.strip()[1:].strip())
    return "\n".join(found).strip()


def doc_of(builtins, name):
    """The documentation of builtin `name`: a function's docstring, or a constant's entry."""
    found = DOCS.get(name)
    if found is None and callable(builtins.get(name)):
        found = builtins[name].__doc__
    return found


def readable(doc):
    """A builtin's docstring for a reader: its examples, which come last, indented."""
    lines = doc.split("\n")
    first = next((k for k, line in enumerate(lines) if line.startswith(">>> ")), len(lines))
    return "\n".join(lines[:first] + ["    " + line for line in lines[first:]])


def builtin_name(value, builtins):
    """The name a builtin is known by, or None."""
    for name, fn in builtins.items():
        if fn is value:
            return name
    return None


def describe(value, builtins):
    """The documentation text of a dg value."""
    value = peek(value)
    name = builtin_name(value, builtins)
    if name is not None:
        return readable((doc_of(builtins, name) or f"{name}: a builtin").strip())
    if isinstance(value, Function):
        code = value.code
        comment = comment_above(code.span)
        head = f"fn {code.signature}"
        return head + ("\n" + comment if comment else "")
    if isinstance(value, StructDef):
        comment = comment_above(value.span)
        head = f"struct {value.name} {{ {', '.join(value.fields)} }}"
        return head + ("\n" + comment if comment else "")
    if isinstance(value, Module):
        names = sorted(n for n in value.cells if not n.startswith("_"))
        comment = module_comment(value)
        return (f"module {value.name}" + ("\n" + comment if comment else "") +
                f"\nnames: {', '.join(names)}")
    if isinstance(value, Transformed):
        return f"{value.name}: a function made by a transformation"
    if getattr(value, "sdef", None) is not None:
        return describe(value.sdef, builtins)
    return f"{show(value, True)[:200]}: {a_type_name(value)} (help describes builtins, functions, structs and modules)"


def overview():
    """help(): every builtin, by section."""
    lines = ["dg's builtins (help(name) for one of them):"]
    for title, names in SECTIONS:
        lines.append(f"  {title}: {', '.join(names)}")
    return "\n".join(lines)


def make(interp):
    """help, printing to the interpreter's output."""

    def help_(*x):
        """help(x): the documentation of a builtin, function, struct or module."""
        if len(x) > 1:
            raise error("type", f"help takes one value, got {len(x)}")
        text = overview() if not x else describe(x[0], interp.builtins)
        return interp.builtins["print"](text)

    return {"help": help_}
