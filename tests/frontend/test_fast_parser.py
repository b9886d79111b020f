"""The lean lexer and LALR loop (dsl/frontend/lalr_driver.py) build exactly what lark's own parser builds."""

import contextlib
import gc
from dataclasses import fields, is_dataclass
from pathlib import Path

import pytest

from dsl.frontend import parser as P
from fuzz_harness import fuzz_examples
from dsl.errors import DgError, Source, Span

ROOT = Path(__file__).resolve().parents[2]
PROGRAMS = sorted(ROOT.glob("examples/*.dg")) + sorted(ROOT.glob("stdlib/*.dg")) + sorted(ROOT.glob("bench/programs/*.dg"))

SNIPPETS = [
    'let s = f"{x:.3f} and {{literal}} {f(\\"a\\")}"\n',
    "if a { return 1 } else if b { return 2 }\nelse { return 3 }\n",
    "let m = {\n  \"a\": 1,\n  \"b\": [1.0, 2.],\n}\nm[\"a\"] += 2; p.w[0, 1:3] = -x ** 2\n",
    "fn f(a, b=2) { let g = fn(x) => x @ a; return g(b) }\nstruct S { a, b }\nS(1, b=2).a\n",
    "for k, v in items(m) { if not (v > 0 and k != \"x\") or true { continue } else { break } }\n",
    "let x = 1e-3 + 2 // 3 % 4 - none\nwhile x < 10 { x = x + 1 }\nimport nn as n\n",
]


def dump(node):
    """A comparable picture of a syntax tree: node types, field values and spans."""
    if isinstance(node, Span):
        return ("Span", node.line, node.column, node.end_line, node.end_column)
    if isinstance(node, Source):
        return ("Source", node.name)
    if is_dataclass(node):
        return (type(node).__name__,) + tuple((f.name, dump(getattr(node, f.name))) for f in fields(node))
    if isinstance(node, (list, tuple)):
        return tuple(dump(x) for x in node)
    if isinstance(node, dict):
        return tuple((k, dump(v)) for k, v in node.items())
    return node if isinstance(node, (int, float, str, bool, type(None))) else repr(node)


def parse_without_lark(text, monkeypatch):
    """Parse with the fast path only: lark's own parse loop must not be needed for correct input."""
    P._get_parser()

    def refuse(*args, **kwargs):
        raise AssertionError("lark's parser ran: the fast path rejected correct input")
    monkeypatch.setattr(P._parser, "parse", refuse)
    try:
        return P.parse(text, "x.dg")
    finally:
        monkeypatch.undo()


def parse_with_lark(text, monkeypatch):
    """Parse with lark's own lexer and parser loop (the fast path switched off)."""
    class Refuse:
        def tokens(self, text):
            raise P.Reject()

        def parse(self, tokens, start):
            raise P.Reject()
    P._get_parser()
    monkeypatch.setattr(P, "_driver", Refuse())
    try:
        return P.parse(text, "x.dg")
    finally:
        monkeypatch.undo()


@pytest.mark.parametrize("text", [p.read_text() for p in PROGRAMS] + SNIPPETS,
                         ids=[p.name for p in PROGRAMS] + [f"snippet{i}" for i in range(len(SNIPPETS))])
def test_same_tree_as_lark(text, monkeypatch):
    fast = parse_without_lark(text, monkeypatch)
    slow = parse_with_lark(text, monkeypatch)
    assert dump(fast) == dump(slow)
    assert len(dump(fast)) > 1


@pytest.mark.parametrize("text", ["let x = 1 +\n", "let = 3", "x = (1, 2", "let a = 'b'", "fn f( { }", "let x = 1 $ 2"])
def test_bad_input_reports_lark_error(text):
    with pytest.raises(DgError) as info:
        P.parse(text, "x.dg")
    assert info.value.kind == "syntax"
    assert info.value.line >= 1


@pytest.mark.parametrize("text", ["", "   ", "# only a comment", "print(1)   ", "print(1) # c", "\n\n  \n"])
def test_edges_of_the_input(text, monkeypatch):
    assert dump(parse_without_lark(text, monkeypatch)) == dump(parse_with_lark(text, monkeypatch))


def _collections_during(action):
    """How many cycle collections ran while `action()` did."""
    runs = []

    def hook(phase, info):
        if phase == "start":
            runs.append(info["generation"])
    gc.callbacks.append(hook)
    try:
        action()
    finally:
        gc.callbacks.remove(hook)
    return len(runs)


BIG = "\n".join(f"let v{k} = {{\"a\": [1.0, {k}.0], \"f\": fn(x) => x * {k}.0 + v0[\"a\"][0]}}"
                for k in range(3000))


def test_the_cycle_collector_rests_while_a_program_is_parsed_resolved_and_compiled():
    import dsl
    assert gc.isenabled()
    # (at most the one that the switch back on may start at once)
    assert _collections_during(lambda: P.parse(BIG, "big.dg")) <= 1
    checker, runner = dsl.Interpreter(), dsl.Interpreter()
    assert _collections_during(lambda: checker.check(BIG, "big.dg")) <= 2
    # running: resolving and compiling a large function that is never called
    assert _collections_during(lambda: runner.run("fn unused() {\n" + BIG + "\nreturn 0 }", "big.dg")) <= 2
    assert gc.isenabled()
    # without the pause the same work does collect (the test above could fail)
    real = P.gc_paused
    try:
        P.gc_paused = contextlib.nullcontext
        assert _collections_during(lambda: P.parse(BIG, "big.dg")) > 5
    finally:
        P.gc_paused = real


def test_the_collector_is_switched_back_on_after_a_syntax_error_and_left_off_if_it_was():
    with pytest.raises(DgError):
        P.parse("let x = (1 +\nlet y = 2", "bad.dg")
    assert gc.isenabled()
    gc.disable()
    try:
        P.parse("let x = 1", "ok.dg")
        assert not gc.isenabled()
    finally:
        gc.enable()


# ---------------------------------------------------------------- the fence around the fast path
def test_without_the_fast_path_lark_parses_every_program_alike(monkeypatch):
    # what dg does with a lark whose internals the driver cannot read
    P._get_parser()
    monkeypatch.setattr(P, "_driver", None)
    for path in PROGRAMS:
        text = path.read_text()
        tree = P.parse(text, "x.dg")
        monkeypatch.undo()
        assert dump(tree) == dump(parse_without_lark(text, monkeypatch)), path.name
        monkeypatch.setattr(P, "_driver", None)
    import dsl
    out = dsl.Interpreter().eval("grad(fn(x) => x * x)(3.0)")
    assert out == 6.0


def test_a_driver_that_cannot_be_built_means_no_fast_path(monkeypatch):
    import lark.parsers.lalr_analysis as analysis
    P._get_parser()
    monkeypatch.delattr(analysis, "Shift")      # as if lark had renamed what the driver reads
    import dsl.frontend.lalr_driver as driver_module
    monkeypatch.setattr(driver_module, "Shift", None)
    assert P.make_driver(P._parser) is None


def test_lark_is_pinned_to_the_versions_the_driver_was_checked_against():
    import tomllib
    import lark
    deps = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    spec = next(d for d in deps if d.startswith("lark"))
    assert ">=" in spec and "<" in spec.replace("<=", "")
    P._get_parser()
    assert P._driver is not None, f"lark {lark.__version__} is in the pinned range but the fast path " \
                                  "could not be built"


FUZZ_SETTINGS = dict(max_examples=fuzz_examples(150), deadline=None,
                     database=None, suppress_health_check=list(__import__("hypothesis").HealthCheck))


def _both(text, monkeypatch):
    """What the fast path and lark's own parser make of `text`: a tree dump or the error's kind and place."""
    results = []
    for parse in (parse_without_lark_or_error, parse_with_lark):
        try:
            results.append(dump(parse(text, monkeypatch)))
        except DgError as exc:
            results.append(("error", exc.kind, exc.line, exc.column, exc.message))
    return results


def parse_without_lark_or_error(text, monkeypatch):
    """The normal parse (fast path, lark for what it rejects), as dg runs it."""
    return P.parse(text, "x.dg")


def test_differential_fuzz_fast_path_against_lark(monkeypatch):
    from hypothesis import given, settings
    import sys
    sys.path.insert(0, str(ROOT / "tests"))
    from fuzz_strategies import mutated_examples, programs, soup
    from hypothesis import strategies as st

    @settings(**FUZZ_SETTINGS)
    @given(st.one_of(programs(), mutated_examples().map(lambda pair: pair[1]), soup()))
    def check(text):
        fast, slow = _both(text, monkeypatch)
        assert fast == slow
    check()
