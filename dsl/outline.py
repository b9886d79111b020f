"""What a dg source declares and where, found without running it: the language server's view.

`Outline(text, path, builtins)` parses and resolves the text (as `dg check` does) and keeps:
every declaration (functions, structs, lets, parameters, loop variables, imports) with its
span; every name use with the binding it resolves to; and what can be known statically about
a variable (the struct it was made from, the keys of the map literal it was bound to). An
imported module is outlined from its file on demand; nothing is ever run, so a module's
top-level code (a training loop, say) never starts because an editor opened a file.
"""

from dataclasses import dataclass, field
from pathlib import Path

from .base.resources import stdlib_dir
from .errors import DgError, Span, source_text
from .frontend import ast as A
from .frontend.parser import parse
from .frontend.resolver import Resolver
from .runtime.builtins.help import comment_above


@dataclass
class Decl:
    """One declared name: what kind, where, and what hover shows for it."""
    name: str
    kind: str                   # "function", "struct", "variable", "parameter", "module"
    span: Span                  # the declaration (for a function or struct, its whole statement)
    detail: str                 # signature, `struct L { w, b }`, `let x = ...`, `import nn`
    doc: str = ""               # the comment above a function or struct
    fields: list = field(default_factory=list)      # a struct's fields
    children: list = field(default_factory=list)    # declarations inside a function
    module: str = None          # an import's module name
    made_by: str = None         # a variable bound to `Struct(...)`: the struct's name
    keys: list = field(default_factory=list)        # a variable bound to a map literal: its string keys


class Outline:
    """The declarations, uses and errors of one dg source."""

    def __init__(self, text, path=None, builtins=None):
        self.text = text
        self.path = Path(path) if path else None
        self.builtins = builtins or {}
        self.decls = []             # top level, in order (functions hold their own)
        self.uses = []              # (span, name, Binding or None)
        self.fields = []            # (span of the field name, obj Expr, field name)
        self.by_span = {}           # (line, column) of a binding's declaration -> Decl
        self.errors = []
        self._modules = {}
        try:
            program = parse(text, str(path or "<input>"))
        except DgError as exc:
            self.errors = [exc]
            return
        resolver = Resolver({}, self.builtins)
        try:
            resolver.resolve_program(program)
        except RecursionError:
            return
        self.errors = list(resolver.problems)
        self.decls = self._block(program.stmts)

    # -- collecting -----------------------------------------------------------
    def _block(self, stmts):
        """The declarations of a list of statements (walking into every nested block)."""
        found = []
        for s in stmts:
            found += self._stmt(s)
        return found

    def _add(self, decl, binding_span=None):
        """Remember a declaration under the position its binding records."""
        span = binding_span or decl.span
        self.by_span[(span.line, span.column)] = decl
        return decl

    def _stmt(self, s):
        """Declarations made by one statement, and the uses inside it."""
        t = type(s)
        if t is A.FnDecl:
            fn = s.fn
            decl = self._add(Decl(s.name, "function", s.span, f"fn {s.name}({self._params(fn)})",
                                  comment_above(s.span)))
            decl.children = self._function(fn)
            return [decl]
        if t is A.StructDecl:
            return [self._add(Decl(s.name, "struct", s.span, f"struct {s.name} {{ {', '.join(s.fields)} }}",
                                   comment_above(s.span), fields=list(s.fields)))]
        if t is A.Import:
            return [self._add(Decl(s.alias, "module", s.span,
                                   f"import {s.module}" + (f" as {s.alias}" if s.alias != s.module else ""),
                                   module=s.module))]
        if t is A.Let:
            self._expr(s.value)
            out = []
            for name, span in zip(s.names, s.name_spans or [s.span] * len(s.names)):
                value = source_text(s.value.span)
                d = Decl(name, "variable", span, f"let {name}" + (f" = {value}" if value and len(s.names) == 1 else ""))
                if len(s.names) == 1:
                    d.made_by, d.keys = _made_by(s.value), _literal_keys(s.value)
                out.append(self._add(d))
            return out
        if t is A.For:
            self._expr(s.iterable)
            out = [self._add(Decl(n, "variable", s.span, f"for {n} in ...")) for n in s.names]
            return out + self._block(s.body.stmts)
        if t is A.If:
            self._expr(s.cond)
            out = self._block(s.then.stmts)
            if isinstance(s.orelse, A.Block):
                out += self._block(s.orelse.stmts)
            elif s.orelse is not None:
                out += self._stmt(s.orelse)
            return out
        if t is A.While:
            self._expr(s.cond)
            return self._block(s.body.stmts)
        for name in ("value", "expr", "target"):
            if getattr(s, name, None) is not None:
                self._expr(getattr(s, name))
        for target in getattr(s, "targets", ()) or ():
            self._expr(target)
        return []

    def _function(self, fn):
        """A function's parameters and the declarations in its body."""
        out = [self._add(Decl(p.name, "parameter", p.span, f"parameter {p.name}" +
                              (f" = {source_text(p.default.span)}" if p.default is not None else "")))
               for p in fn.params]
        for p in fn.params:
            if p.default is not None:
                self._expr(p.default)
        if isinstance(fn.body, A.Block):
            out += self._block(fn.body.stmts)
        else:
            self._expr(fn.body)
        return out

    def _params(self, fn):
        """A parameter list as written."""
        return ", ".join(p.name + (f"={source_text(p.default.span)}" if p.default is not None else "")
                         for p in fn.params)

    def _expr(self, e):
        """Record the names and field reads in an expression (iteratively: no depth limit)."""
        todo = [e]
        while todo:
            e = todo.pop()
            if e is None or isinstance(e, (str, int, float, bool)):
                continue
            if isinstance(e, (list, tuple)):
                todo.extend(e)
                continue
            t = type(e)
            if t is A.Name:
                self.uses.append((e.span, e.id, e.binding))
            elif t is A.Field:
                end = e.span
                self.fields.append((Span(end.source, end.end_line, end.end_column - len(e.name),
                                         end.end_line, end.end_column), e.obj, e.name))
                todo.append(e.obj)
            elif t is A.Lambda:
                self._function(e)
            elif t is A.FString:
                todo.extend(e.fields())
            elif t is A.Call:
                todo.append(e.fn)
                todo.extend(e.args)
                todo.extend(v for _, v in e.kwargs)
            elif t is A.MapLit:
                for k, v in e.pairs:
                    todo += [k, v]
            elif t is A.Slice:
                todo += [e.lo, e.hi, e.step]
            elif hasattr(e, "__dataclass_fields__"):
                for name in e.__dataclass_fields__:
                    if name not in ("span", "binding", "scope"):
                        todo.append(getattr(e, name))

    # -- questions ------------------------------------------------------------
    def all_decls(self):
        """Every declaration, nested ones included."""
        out, todo = [], list(self.decls)
        while todo:
            d = todo.pop(0)
            out.append(d)
            todo = d.children + todo
        return out

    def decl_of(self, binding):
        """The declaration a binding comes from, or None (a builtin, an undefined name)."""
        if binding is None or binding.span is None:
            return None
        return self.by_span.get((binding.span.line, binding.span.column))

    def at(self, line, column):
        """What is at a 1-based position: ("name", name, Decl or None), ("field", obj Expr, name), or None."""
        for span, name, binding in self.uses:
            if _inside(span, line, column):
                return ("name", name, self.decl_of(binding))
        for span, obj, name in self.fields:
            if _inside(span, line, column):
                return ("field", obj, name)
        for d in self.all_decls():
            if d.span.line == line and d.kind in ("variable", "parameter") and \
                    d.span.column <= column <= d.span.column + len(d.name):
                return ("name", d.name, d)
        return None

    def target_of(self, obj):
        """What `obj` in `obj.name` is known to be: a module Outline, a struct Decl, or None."""
        if type(obj) is not A.Name:
            return None
        decl = self.decl_of(obj.binding)
        if decl is None:
            return None
        if decl.kind == "module":
            return self.module(decl.module)
        if decl.kind == "variable" and decl.made_by:
            return self.struct(decl.made_by)
        return None

    def struct(self, name):
        """The struct declared under `name` in this source, or None."""
        return next((d for d in self.all_decls() if d.kind == "struct" and d.name == name), None)

    def module(self, name):
        """The Outline of an imported module's file (beside this file, or the standard library)."""
        if name not in self._modules:
            self._modules[name] = None
            path = module_path(name, self.path)
            if path is not None:
                try:
                    self._modules[name] = Outline(path.read_text(encoding="utf-8"), path, self.builtins)
                except (OSError, UnicodeDecodeError):
                    pass
        return self._modules[name]


def module_path(name, beside):
    """Where `import name` finds its file: beside the importing file, then in the standard library."""
    places = ([beside.parent] if beside is not None else []) + [Path(stdlib_dir())]
    for place in places:
        candidate = place / f"{name}.dg"
        if candidate.is_file():
            return candidate
    return None


def _inside(span, line, column):
    """Whether a 1-based position falls in a one-line span (its end included, for a cursor after it)."""
    return span.line == line and span.column <= column <= span.end_column


def _made_by(value):
    """The struct name of a `Name(...)` call that starts with a capital letter, else None."""
    if type(value) is A.Call and type(value.fn) is A.Name and value.fn.id[:1].isupper():
        return value.fn.id
    return None


def _literal_keys(value):
    """The string keys of a map literal."""
    if type(value) is not A.MapLit:
        return []
    return [k.value for k, _ in value.pairs if type(k) is A.Const and type(k.value) is str]
