"""`dg lsp`, tested as an editor uses it: a real LSP session with the server as a subprocess."""

import asyncio
import sys
import time
from types import SimpleNamespace

import pytest

pytest.importorskip("pygls")

from lsprotocol import types as T  # noqa: E402
from pygls.exceptions import JsonRpcInvalidParams  # noqa: E402
from pygls.lsp.client import LanguageClient  # noqa: E402

from dsl.outline import Outline  # noqa: E402

TIMEOUT = 60

PROGRAM = '''import nn

# A dense layer.
struct Linear { weight, bias }

# The layer applied to x.
fn dense(layer, x) {
    let h = x @ layer.weight
    return h + layer.bias
}

let p = Linear(ones((2, 2)), zeros(2))
let cfg = {"lr": 0.1, "steps": 10}
print(dense(p, ones(2)), nn.linear(2, 3))
'''


class Session:
    """An LSP client talking to `python -m dsl lsp`, with the diagnostics it was sent."""

    def __init__(self, tmp_path):
        self.client = LanguageClient("dg-tests", "1")
        self.diagnostics = {}
        self.arrived = asyncio.Event()
        self.folder = tmp_path
        self.version = 1

        @self.client.feature(T.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
        def on_diagnostics(ls, params):
            self.diagnostics[params.uri] = params.diagnostics
            self.arrived.set()

    async def start(self):
        await self.client.start_io(sys.executable, "-m", "dsl", "lsp")
        result = await asyncio.wait_for(self.client.initialize_async(T.InitializeParams(
            capabilities=T.ClientCapabilities(), root_uri=self.folder.as_uri())), TIMEOUT)
        self.client.initialized(T.InitializedParams())
        return result

    async def open(self, name, text):
        uri = (self.folder / name).as_uri()
        (self.folder / name).write_text(text)
        self.arrived.clear()
        self.client.text_document_did_open(T.DidOpenTextDocumentParams(
            text_document=T.TextDocumentItem(uri=uri, language_id="dg", version=1, text=text)))
        await asyncio.wait_for(self.arrived.wait(), TIMEOUT)
        return uri

    async def change(self, uri, text):
        self.version += 1
        self.arrived.clear()
        self.client.text_document_did_change(T.DidChangeTextDocumentParams(
            text_document=T.VersionedTextDocumentIdentifier(uri=uri, version=self.version),
            content_changes=[T.TextDocumentContentChangeWholeDocument(text=text)]))
        await asyncio.wait_for(self.arrived.wait(), TIMEOUT)

    def at(self, uri, line, character):
        return dict(text_document=T.TextDocumentIdentifier(uri=uri),
                    position=T.Position(line=line, character=character))

    async def hover(self, uri, line, character):
        found = await asyncio.wait_for(self.client.text_document_hover_async(
            T.HoverParams(**self.at(uri, line, character))), TIMEOUT)
        return found.contents.value if found else None

    async def complete(self, uri, line, character):
        found = await asyncio.wait_for(self.client.text_document_completion_async(
            T.CompletionParams(**self.at(uri, line, character))), TIMEOUT)
        items = found.items if isinstance(found, T.CompletionList) else found
        return {item.label: item for item in items}

    async def definition(self, uri, line, character):
        return await asyncio.wait_for(self.client.text_document_definition_async(
            T.DefinitionParams(**self.at(uri, line, character))), TIMEOUT)

    async def stop(self):
        await asyncio.wait_for(self.client.shutdown_async(None), TIMEOUT)
        self.client.exit(None)
        await asyncio.wait_for(self.client.stop(), TIMEOUT)


def run(tmp_path, scenario):
    """Run one scenario against a fresh server."""
    async def main():
        session = Session(tmp_path)
        result = await session.start()
        try:
            return await scenario(session, result)
        finally:
            await session.stop()
    asyncio.run(main())


def test_capabilities_and_clean_diagnostics(tmp_path):
    async def scenario(s, result):
        caps = result.capabilities
        assert caps.hover_provider and caps.definition_provider and caps.document_symbol_provider
        assert "." in caps.completion_provider.trigger_characters
        uri = await s.open("model.dg", PROGRAM)
        assert list(s.diagnostics[uri]) == []
    run(tmp_path, scenario)


def test_diagnostics_as_you_type_are_what_dg_check_finds(tmp_path):
    async def scenario(s, _):
        uri = await s.open("model.dg", PROGRAM)
        await s.change(uri, PROGRAM.replace("return h + layer.bias", "return h + layer.bias + sofmax(h)")
                       + "import missing_module\n")
        found = s.diagnostics[uri]
        assert [(d.code, d.range.start.line, d.range.start.character) for d in found] == [
            ("name", 8, 28), ("import", 14, 0)]
        assert "'sofmax' is not defined" in found[0].message and "did you mean 'softmax'?" in found[0].message
        assert found[0].range.end.character == 34 and found[0].source == "dg"
        assert found[0].severity == T.DiagnosticSeverity.Error
        await s.change(uri, "let x = (1 +\n")
        [syntax] = s.diagnostics[uri]
        assert syntax.code == "syntax" and syntax.range.start.line == 0
        await s.change(uri, PROGRAM)
        assert list(s.diagnostics[uri]) == []
    run(tmp_path, scenario)


def test_hover_shows_docstrings_signatures_and_comments(tmp_path):
    async def scenario(s, _):
        uri = await s.open("model.dg", PROGRAM + "print(p.weight)\n")
        line = PROGRAM.split("\n")[13]          # print(dense(p, ones(2)), nn.linear(2, 3))
        assert (await s.hover(uri, 13, line.index("dense") + 1)).startswith("```dg\nfn dense(layer, x)\n```\n\nThe layer applied to x.")
        assert "print(a, b, ...," in await s.hover(uri, 13, 1)
        assert "Differentiable:" in await s.hover(uri, 13, line.index("ones") + 1)
        assert 'fn linear(n_in, n_out, init="he", dtype="float64")' in await s.hover(uri, 13, line.index("linear") + 2)
        assert "struct Linear { weight, bias }" in await s.hover(uri, 11, 9)
        assert "parameter layer" in await s.hover(uri, 7, 16)
        assert await s.hover(uri, 7, 23) is None        # layer.weight: a parameter's fields are not known
        assert "field weight of struct Linear" in await s.hover(uri, 14, 9)     # p.weight, p = Linear(...)
        assert "let cfg = {" in await s.hover(uri, 12, 5)
        assert await s.hover(uri, 2, 3) is None          # inside a comment
    run(tmp_path, scenario)


def test_completion_of_builtins_names_fields_members_and_keys(tmp_path):
    async def scenario(s, _):
        uri = await s.open("model.dg", PROGRAM)
        text = PROGRAM + "let y = sof"
        await s.change(uri, text)
        items = await s.complete(uri, 14, 11)
        assert "softmax" in items and items["softmax"].kind == T.CompletionItemKind.Function
        await s.change(uri, PROGRAM + "let y = de")
        assert "dense" in await s.complete(uri, 14, 10)
        await s.change(uri, PROGRAM + "let y = p.")
        assert set(await s.complete(uri, 14, 10)) == {"weight", "bias"}
        await s.change(uri, PROGRAM + "let y = nn.")
        members = await s.complete(uri, 14, 11)
        assert {"linear", "mlp", "dense", "Linear"} <= set(members)
        await s.change(uri, PROGRAM + 'let y = cfg["')
        assert set(await s.complete(uri, 14, 13)) == {"lr", "steps"}
    run(tmp_path, scenario)


def test_go_to_definition_of_functions_structs_lets_parameters_and_modules(tmp_path):
    async def scenario(s, _):
        uri = await s.open("model.dg", PROGRAM)
        line = PROGRAM.split("\n")[13]
        found = await s.definition(uri, 13, line.index("dense") + 1)
        assert found.uri == uri and found.range.start.line == 6
        found = await s.definition(uri, 11, 9)                  # Linear(...)
        assert found.range.start.line == 3
        found = await s.definition(uri, 13, line.index("(p,") + 1)  # p
        assert (found.range.start.line, found.range.start.character) == (11, 4)
        found = await s.definition(uri, 8, 11)                  # h in `return h + ...`
        assert found.range.start.line == 7
        found = await s.definition(uri, 13, line.index("nn.") + 1)
        assert found.uri.endswith("/nn.dg")
        found = await s.definition(uri, 13, line.index("linear") + 1)
        assert found.uri.endswith("/nn.dg") and found.range.start.line > 0
        assert await s.definition(uri, 13, 2) is None            # print is a builtin
    run(tmp_path, scenario)


def test_document_symbols(tmp_path):
    async def scenario(s, _):
        uri = await s.open("model.dg", PROGRAM)
        symbols = await asyncio.wait_for(s.client.text_document_document_symbol_async(
            T.DocumentSymbolParams(text_document=T.TextDocumentIdentifier(uri=uri))), TIMEOUT)
        assert [(x.name, x.kind) for x in symbols] == [
            ("nn", T.SymbolKind.Module), ("Linear", T.SymbolKind.Struct), ("dense", T.SymbolKind.Function),
            ("p", T.SymbolKind.Variable), ("cfg", T.SymbolKind.Variable)]
        assert [c.name for c in symbols[2].children] == ["h"]
    run(tmp_path, scenario)


def test_dg_lsp_without_pygls_says_which_extra(tmp_path):
    import subprocess
    code = ("import sys\nsys.modules['pygls'] = None\nsys.modules['pygls.lsp.server'] = None\n"
            "from dsl import cli\nsys.exit(cli.main(['lsp']))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=TIMEOUT)
    assert done.returncode == 1 and "dg-lang[lsp]" in done.stderr


def test_outlines_never_run_the_code(tmp_path):
    (tmp_path / "side.dg").write_text('print("ran!")\nfn helper(x) { return x }\n')
    outline = Outline("import side\nside.helper(1)\n", tmp_path / "main.dg")
    assert [d.name for d in outline.module("side").decls] == ["helper"]


def _long_program(functions):
    """A file of `functions` documented functions, five lines each."""
    lines = []
    for i in range(functions):
        lines += [f"# The {i}th step.", f"fn f{i}(x, y) {{", f"    let z = x * y + {i}.0",
                  f"    return sum(z) + f{max(i - 1, 0)}(x, y) * 0.0", "}"]
    return "\n".join(lines) + "\n"


def test_a_hover_after_quick_edits_of_a_long_file_is_answered_at_once(tmp_path):
    # checking 20,000 lines takes seconds: checks wait for a pause in typing, run off the thread that
    # answers requests, and a check of a superseded text publishes nothing
    text = _long_program(4000)

    async def scenario(s, _):
        uri = await s.open("long.dg", text)
        s.arrived.clear()
        for k in range(30):
            s.version += 1
            s.client.text_document_did_change(T.DidChangeTextDocumentParams(
                text_document=T.VersionedTextDocumentIdentifier(uri=uri, version=s.version),
                content_changes=[T.TextDocumentContentChangeWholeDocument(text=text + f"let edit = {k}\n")]))
        start = time.monotonic()
        found = await s.hover(uri, 18, 21)
        assert time.monotonic() - start < 2.0
        assert "The 2th step." in found
        await asyncio.wait_for(s.arrived.wait(), TIMEOUT)     # the newest text is checked, once
        assert list(s.diagnostics[uri]) == []
        s.arrived.clear()
        await asyncio.sleep(1.0)
        assert not s.arrived.is_set()      # no superseded check published anything later
    run(tmp_path, scenario)


async def raw_request(s, method, params):
    """Send a request as raw JSON and wait for the raw response with its id."""
    protocol = s.client.protocol
    answered = asyncio.get_running_loop().create_future()
    real = protocol.structure_message

    def spy(data):
        if data.get("id") == "raw-1" and "method" not in data:
            answered.set_result(data)
            return SimpleNamespace(jsonrpc="seen")
        return real(data)
    protocol.structure_message = spy
    try:
        protocol._send_data({"jsonrpc": "2.0", "id": "raw-1", "method": method, "params": params})
        return await answered
    finally:
        protocol.structure_message = real


def test_requests_with_bad_positions_or_unopened_documents_get_proper_answers(tmp_path):
    async def scenario(s, _):
        uri = await s.open("model.dg", PROGRAM)
        # a raw request: the client's own types refuse a line of -1
        reply = await asyncio.wait_for(raw_request(s, "textDocument/hover", {
            "textDocument": {"uri": uri}, "position": {"line": -1, "character": 0}}), TIMEOUT)
        assert reply["error"]["code"] == JsonRpcInvalidParams.CODE
        unopened = (tmp_path / "never_opened.dg").as_uri()
        assert await s.complete(unopened, 0, 0) == {}
        assert await s.hover(unopened, 0, 0) is None
        assert "The layer applied to x." in await s.hover(uri, 13, 7)       # the server goes on
    run(tmp_path, scenario)
