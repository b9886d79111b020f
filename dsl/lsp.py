"""`dg lsp`: a language server for dg on standard input and output (pygls; docs/editors.md).

Diagnostics are what `dg check` finds, published on open, change and save. Hover, completion,
go to definition and document symbols read a static outline of the file (dsl/outline.py);
while an edit leaves the file unparseable they use the last outline that parsed, so completion
keeps working in the middle of a line. Nothing in a file is ever run.

Checking a long file takes seconds, so it happens off the thread that answers requests, once
typing pauses (CHECK_DELAY), on the newest text only: a check whose text an edit has replaced
publishes nothing, and requests are answered meanwhile from the last outline.
"""

import asyncio
import re
import sys
import threading
import time
from types import SimpleNamespace
from urllib.parse import unquote, urlparse

from lsprotocol import types as T
from pygls.exceptions import JsonRpcException, JsonRpcInvalidParams
from pygls.lsp.server import LanguageServer
from pygls.protocol import LanguageServerProtocol

from . import __version__
from .frontend.syntax_errors import KEYWORDS
from .outline import Decl, Outline, module_path
from .runtime.builtins.help import doc_of, readable
from .runtime.interpreter import Interpreter

_MEMBER = re.compile(r"([A-Za-z_]\w*)\.(\w*)$")
_MAP_KEY = re.compile(r'([A-Za-z_]\w*)\[\s*"([^"\\]*)$')
_WORD = re.compile(r"[A-Za-z_]\w*$")
KINDS = {"function": T.SymbolKind.Function, "struct": T.SymbolKind.Struct, "variable": T.SymbolKind.Variable,
         "parameter": T.SymbolKind.Variable, "module": T.SymbolKind.Module}
ITEM_KINDS = {"function": T.CompletionItemKind.Function, "struct": T.CompletionItemKind.Struct,
              "variable": T.CompletionItemKind.Variable, "parameter": T.CompletionItemKind.Variable,
              "module": T.CompletionItemKind.Module}


# ---------------------------------------------------------------- positions
def path_of(uri):
    """The file path of a file:// URI, or None."""
    parsed = urlparse(uri)
    return unquote(parsed.path) if parsed.scheme == "file" else None


def lsp_range(span):
    """An LSP range (0-based) for a dg span (1-based, end column exclusive)."""
    return T.Range(start=T.Position(line=span.line - 1, character=span.column - 1),
                   end=T.Position(line=span.end_line - 1, character=max(span.end_column - 1, span.column)))


def diagnostic(err):
    """An LSP diagnostic for a DgError."""
    span = err.span
    where = lsp_range(span) if span is not None else T.Range(start=T.Position(line=0, character=0),
                                                              end=T.Position(line=0, character=1))
    return T.Diagnostic(range=where, message=err.message + (f"\nhelp: {err.hint}" if err.hint else ""),
                        severity=T.DiagnosticSeverity.Error, code=err.kind, source="dg")


# ---------------------------------------------------------------- the server's state
class Documents:
    """The outlines of the open documents (the last one that parsed, for each)."""

    def __init__(self):
        self.interp = Interpreter()
        self.builtins = self.interp.builtins
        self.outlines = {}

    def update(self, uri, text):
        """Outline a new version of a document; return its diagnostics (what `dg check` finds)."""
        path = path_of(uri)
        outline = Outline(text, path, self.builtins)
        if outline.decls or uri not in self.outlines or not outline.errors:
            self.outlines[uri] = outline
        return [diagnostic(e) for e in self.interp.check(text, path or uri)]

    def lookup(self, uri, line, column):
        """What a 1-based position names: ("decl", Decl), ("builtin", name), ("member", Decl, the
        module's Outline), ("field", name, the struct's Decl), or None; and the document's Outline."""
        outline = self.outlines.get(uri)
        what = outline.at(line, column) if outline else None
        if what is None:
            return None, outline
        if what[0] == "name":
            _, name, decl = what
            if decl is not None:
                return ("decl", decl), outline
            return (("builtin", name) if name in self.builtins else None), outline
        _, obj, name = what
        target = outline.target_of(obj)
        member = _member(target, name)
        if member is not None:
            return ("member", member, target), outline
        if isinstance(target, Decl) and name in target.fields:
            return ("field", name, target), outline
        return None, outline

    def hover(self, uri, line, column):
        """Markdown for what is at a 1-based position, or None."""
        found, _ = self.lookup(uri, line, column)
        if found is None:
            return None
        kind = found[0]
        if kind == "builtin":
            return _code(readable(doc_of(self.builtins, found[1]) or found[1]))
        if kind == "field":
            return _code(f"field {found[1]} of {found[2].detail}")
        return _decl_markdown(found[1])

    def definition(self, uri, line, column):
        """(uri, span or None) of the declaration of what is at a position, or None."""
        found, outline = self.lookup(uri, line, column)
        if found is None or found[0] == "builtin":
            return None
        kind, decl = found[0], found[1]
        if kind == "member":
            return found[2].path.as_uri(), decl.span
        if kind == "field":
            return uri, found[2].span
        if decl.kind == "module":
            path = module_path(decl.module, outline.path)
            return (path.as_uri(), None) if path else None
        return uri, decl.span

    def complete(self, uri, before):
        """Completion items for the text of the line before the cursor."""
        outline = self.outlines.get(uri)
        if outline is None:
            return []
        m = _MAP_KEY.search(before)
        if m:
            decl = _named(outline, m.group(1))
            return [T.CompletionItem(label=k, kind=T.CompletionItemKind.Value, insert_text=k)
                    for k in (decl.keys if decl else []) if k.startswith(m.group(2))]
        m = _MEMBER.search(before)
        if m:
            decl = _named(outline, m.group(1))
            if decl is None:
                return []
            if decl.kind == "module":
                module = outline.module(decl.module)
                members = [d for d in (module.decls if module else []) if not d.name.startswith("_")]
                return [_item(d) for d in members if d.name.startswith(m.group(2))]
            struct = outline.struct(decl.made_by) if decl.made_by else None
            return [T.CompletionItem(label=f, kind=T.CompletionItemKind.Field, detail=struct.detail)
                    for f in (struct.fields if struct else []) if f.startswith(m.group(2))]
        m = _WORD.search(before)
        prefix = m.group(0) if m else ""
        items, seen = [], set()
        for d in outline.all_decls():
            if d.name.startswith(prefix) and d.name not in seen:
                seen.add(d.name)
                items.append(_item(d))
        for name in sorted(self.builtins):
            if name.startswith(prefix) and name not in seen:
                seen.add(name)
                doc = doc_of(self.builtins, name) or ""
                items.append(T.CompletionItem(label=name, kind=T.CompletionItemKind.Function,
                                              detail=doc.split(": ", 1)[0] if doc else None,
                                              documentation=_code(readable(doc)) if doc else None))
        items += [T.CompletionItem(label=k, kind=T.CompletionItemKind.Keyword)
                  for k in sorted(KEYWORDS) if k.startswith(prefix) and k not in seen]
        return items

    def symbols(self, uri):
        """The document's declarations as a tree of symbols."""
        outline = self.outlines.get(uri)
        return [_symbol(d) for d in (outline.decls if outline else []) if d.kind != "parameter"]


def _named(outline, name):
    """The declaration of `name` in an outline (the last one, as a later `let` shadows)."""
    found = [d for d in outline.all_decls() if d.name == name]
    return found[-1] if found else None


def _member(target, name):
    """The top-level declaration `name` of a module outline, or None."""
    if not isinstance(target, Outline):
        return None
    return next((d for d in target.decls if d.name == name), None)


def _code(text):
    """Markdown showing text as dg code."""
    return T.MarkupContent(kind=T.MarkupKind.Markdown, value=f"```dg\n{text}\n```")


def _decl_markdown(decl):
    """Hover text of a declaration: its signature or definition, then its comment."""
    text = f"```dg\n{decl.detail}\n```"
    if decl.doc:
        text += "\n\n" + decl.doc
    return T.MarkupContent(kind=T.MarkupKind.Markdown, value=text)


def _item(decl):
    """A completion item for a declaration."""
    return T.CompletionItem(label=decl.name, kind=ITEM_KINDS[decl.kind], detail=decl.detail,
                            documentation=decl.doc or None)


def _symbol(decl):
    """An LSP document symbol for a declaration, with its nested ones."""
    span = lsp_range(decl.span)
    return T.DocumentSymbol(name=decl.name, kind=KINDS[decl.kind], range=span, selection_range=span,
                            detail=decl.detail,
                            children=[_symbol(c) for c in decl.children if c.kind != "parameter"] or None)


# ---------------------------------------------------------------- checking off the request thread
CHECK_DELAY = 0.25      # seconds without an edit before a changed document is checked


class Checker:
    """One worker thread that checks documents: the newest text of each, after a pause in typing.

    `submit` records a document's text; the worker outlines and checks it once no newer text has
    come for `delay` seconds, and hands the diagnostics to `publish` unless newer text came while
    it checked (then that text is checked next, and the superseded diagnostics are dropped)."""

    def __init__(self, docs, publish):
        self.docs = docs
        self.publish = publish
        self.pending = {}           # uri -> (text, when it may be checked)
        self.closed = set()
        self.cond = threading.Condition()
        threading.Thread(target=self._work, name="dg-lsp-checker", daemon=True).start()

    def submit(self, uri, text, delay=CHECK_DELAY):
        """Check `text` as the document's newest version, `delay` seconds from now at the earliest."""
        with self.cond:
            self.closed.discard(uri)
            self.pending[uri] = (text, time.monotonic() + delay)
            self.cond.notify()

    def close(self, uri):
        """Forget a document: a check of it in progress publishes nothing."""
        with self.cond:
            self.pending.pop(uri, None)
            self.closed.add(uri)

    def _next(self):
        """Wait for a document whose pause is over; return (uri, text)."""
        with self.cond:
            while True:
                now = time.monotonic()
                ready = [(when, uri) for uri, (_, when) in self.pending.items() if when <= now]
                if ready:
                    uri = min(ready)[1]
                    return uri, self.pending.pop(uri)[0]
                wait = min((when for _, when in self.pending.values()), default=None)
                self.cond.wait(None if wait is None else wait - now)

    def _work(self):
        """The worker's loop."""
        while True:
            uri, text = self._next()
            try:
                found = self.docs.update(uri, text)
            except Exception as exc:        # a bug in the checker must not end the worker
                found = [T.Diagnostic(range=T.Range(start=T.Position(line=0, character=0),
                                                    end=T.Position(line=0, character=1)),
                                      message=f"dg could not check this file ({type(exc).__name__}: {exc})",
                                      severity=T.DiagnosticSeverity.Warning, source="dg")]
            with self.cond:
                superseded = uri in self.pending or uri in self.closed
            if not superseded:
                self.publish(uri, found)


# ---------------------------------------------------------------- the server
class Protocol(LanguageServerProtocol):
    """pygls's protocol, answering a request whose parameters do not parse (a position of -1) with
    an InvalidParams error instead of dropping it: every request gets a response."""

    def structure_message(self, data):
        try:
            return super().structure_message(data)
        except JsonRpcException:
            if "id" not in data or "method" not in data:
                raise
            self._send_response(data["id"], error=T.ResponseError(
                code=JsonRpcInvalidParams.CODE, message=f"invalid parameters for {data['method']}"))
            return SimpleNamespace(jsonrpc="answered")      # handle_message passes it by


def make_server(delay=CHECK_DELAY):
    """A pygls server with dg's features registered."""
    server = LanguageServer("dg", __version__, protocol_cls=Protocol)
    docs = Documents()

    loop = []       # the event loop answering requests, seen from the first notification

    def publish(uri, diagnostics):
        """Send diagnostics from the checker's thread through the server's event loop (one writer)."""
        params = T.PublishDiagnosticsParams(uri=uri, diagnostics=diagnostics)
        loop[0].call_soon_threadsafe(server.text_document_publish_diagnostics, params)

    checker = Checker(docs, publish)

    def submit(uri, text, wait):
        """Queue a check of a document's text (noting the loop publishing will go through)."""
        if not loop:
            loop.append(asyncio.get_running_loop())
        checker.submit(uri, text, delay=wait)

    def text_of(uri):
        """The text of an open document, or None."""
        doc = server.workspace.text_documents.get(uri)
        return doc.source if doc is not None else None

    @server.feature(T.TEXT_DOCUMENT_DID_OPEN)
    def did_open(ls, params):
        submit(params.text_document.uri, params.text_document.text, 0.0)

    @server.feature(T.TEXT_DOCUMENT_DID_CHANGE)
    def did_change(ls, params):
        text = text_of(params.text_document.uri)
        if text is not None:
            submit(params.text_document.uri, text, delay)

    @server.feature(T.TEXT_DOCUMENT_DID_SAVE)
    def did_save(ls, params):
        text = text_of(params.text_document.uri)
        if text is not None:
            submit(params.text_document.uri, text, 0.0)

    @server.feature(T.TEXT_DOCUMENT_DID_CLOSE)
    def did_close(ls, params):
        checker.close(params.text_document.uri)
        docs.outlines.pop(params.text_document.uri, None)
        server.text_document_publish_diagnostics(T.PublishDiagnosticsParams(uri=params.text_document.uri,
                                                                            diagnostics=[]))

    @server.feature(T.TEXT_DOCUMENT_HOVER)
    def hover(ls, params):
        pos = params.position
        text = docs.hover(params.text_document.uri, pos.line + 1, pos.character + 1)
        return T.Hover(contents=text) if text is not None else None

    @server.feature(T.TEXT_DOCUMENT_DEFINITION)
    def definition(ls, params):
        pos = params.position
        found = docs.definition(params.text_document.uri, pos.line + 1, pos.character + 1)
        if found is None:
            return None
        uri, span = found
        where = lsp_range(span) if span is not None else T.Range(start=T.Position(line=0, character=0),
                                                                  end=T.Position(line=0, character=0))
        return T.Location(uri=uri, range=where)

    @server.feature(T.TEXT_DOCUMENT_COMPLETION, T.CompletionOptions(trigger_characters=[".", '"']))
    def completion(ls, params):
        uri, pos = params.text_document.uri, params.position
        text = text_of(uri)
        if text is None:        # a document the client never opened: nothing to complete from
            return T.CompletionList(is_incomplete=False, items=[])
        lines = text.splitlines()
        before = lines[pos.line][:pos.character] if pos.line < len(lines) else ""
        return T.CompletionList(is_incomplete=False, items=docs.complete(uri, before))

    @server.feature(T.TEXT_DOCUMENT_DOCUMENT_SYMBOL)
    def symbols(ls, params):
        return docs.symbols(params.text_document.uri)

    return server


def main():
    """Serve LSP on standard input and output until the client says exit."""
    make_server().start_io()
    return 0


if __name__ == "__main__":
    sys.exit(main())
