"""docs/reference.md and the builtins' docstrings: one source, every builtin documented, every example true."""

import inspect
import io
import re

import pytest

import dsl
from dsl import reference
from dsl.runtime.builtins import docs
from dsl.runtime.builtins.docs import SECTIONS
from dsl.runtime.builtins.help import doc_of
from dsl.repl import Repl

BUILTINS = dsl.Interpreter().builtins
EXAMPLES = [(name, example, shown)
            for name in sorted(BUILTINS)
            for example, shown in reference.parse_doc(doc_of(BUILTINS, name) or "")[3]]


def test_every_builtin_is_in_exactly_one_section():
    listed = [name for _, names in SECTIONS for name in names]
    assert sorted(listed) == sorted(BUILTINS)
    assert len(listed) == len(set(listed))


@pytest.mark.parametrize("name", sorted(BUILTINS))
def test_every_builtin_has_a_docstring_in_the_reference_format(name):
    doc = doc_of(BUILTINS, name)
    assert doc, f"{name} has no docstring"
    signature, meaning, differentiable, examples = reference.parse_doc(doc)
    # a function's entry starts with its signature, a constant's with its name
    want = rf"{name}\(" if callable(BUILTINS[name]) else rf"{name}\Z"
    assert re.match(want, signature), f"{name}'s docstring does not start with its signature"
    assert meaning, f"{name}'s docstring has no meaning after its signature"
    assert re.match(r"(yes|no)\b", differentiable), f"{name}'s docstring does not say whether it is differentiable"
    assert examples, f"{name}'s docstring has no example"


def _documented_parameters(name):
    """The parameter names of a builtin's first signature in its docstring ("f(a, b=1, *xs)" ->
    ["a", "b", "xs"]), or None for a constant."""
    signature = reference.parse_doc(doc_of(BUILTINS, name) or "")[0]
    found = re.match(rf"{name}\((.*?)\)", signature)
    if found is None:
        return None
    return [p.split("=")[0].strip().lstrip("*") for p in found.group(1).split(",") if p.strip()]


@pytest.mark.parametrize("name", sorted(n for n in BUILTINS if callable(BUILTINS[n])))
def test_every_parameter_the_reference_names_is_one_the_builtin_takes(name):
    """A call by keyword works as documented: `logit(p=0.5)`, `bernoulli(0.5, dtype="bool")`."""
    params = inspect.signature(BUILTINS[name]).parameters
    kinds = {p.kind for p in params.values()}
    if inspect.Parameter.VAR_KEYWORD in kinds or inspect.Parameter.VAR_POSITIONAL in kinds:
        return      # takes what it is given (print's sep and end, einsum's operands): checked by its tests
    missing = [p for p in _documented_parameters(name) or () if p not in params]
    assert not missing, f"{name}'s reference entry names {missing}, which it does not take ({list(params)})"


@pytest.mark.parametrize("name,example,shown", EXAMPLES, ids=[f"{n}:{e}" for n, e, _ in EXAMPLES])
def test_every_example_shows_what_its_docstring_says(name, example, shown, tmp_path, monkeypatch):
    if name == "plot":
        pytest.importorskip("matplotlib")
    if name in ("shard", "devices"):
        pytest.importorskip("jax")      # the xla extra
    monkeypatch.chdir(tmp_path)
    (tmp_path / "data.csv").write_text("x,y\n1,2\n3,4\n")
    out, err = io.StringIO(), io.StringIO()
    interp = dsl.Interpreter(seed=0, stdout=out)
    repl = Repl(interp, out=out, err=err)
    # The examples of one docstring run in order in one session (save, then load).
    for earlier, _ in reference.parse_doc(doc_of(BUILTINS, name))[3]:
        if earlier == example:
            break
        repl.execute(earlier)
    out.seek(0)
    out.truncate()
    repl.execute(example)
    assert err.getvalue() == ""
    assert out.getvalue() == ("" if shown is None else shown + "\n")


def test_the_plot_example_writes_a_png(tmp_path, monkeypatch):
    pytest.importorskip("matplotlib")
    monkeypatch.chdir(tmp_path)
    [(example, _)] = reference.parse_doc(BUILTINS["plot"].__doc__)[3]
    Repl(dsl.Interpreter(), out=io.StringIO(), err=io.StringIO()).execute(example)
    assert (tmp_path / "loss.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_the_reference_is_generated_from_the_docstrings():
    assert reference.main(["--check"]) == 0, "docs/reference.md is out of date: run python -m dsl.reference"


def test_a_changed_docstring_makes_the_reference_out_of_date(monkeypatch):
    text = reference.Path(reference.__file__).resolve().parent.parent.joinpath("docs", "reference.md").read_text()
    assert reference.updated(text) == text
    monkeypatch.setitem(docs.DOCS, "erf", "erf(x): something else.\nDifferentiable: no.\n>>> 1\n1")
    assert "Something else." in reference.updated(text)


def test_every_stdlib_function_is_in_the_reference_with_its_comment():
    text = reference.Path(reference.__file__).resolve().parent.parent.joinpath("docs", "reference.md").read_text()
    for entry in ("`nn.linear(n_in, n_out, init=\"he\", dtype=\"float64\")`", "`optim.adam(params, grads, state, lr, b1=0.9, b2=0.999",
                  "`struct nn.Linear { w, b }`"):
        assert entry in text
    assert "(undocumented)" not in text


def test_no_doc_points_at_a_spec_outside_the_repository():
    root = reference.Path(reference.__file__).resolve().parent.parent
    for path in [root / "README.md", *(root / "docs").glob("*.md")]:
        assert not re.search(r"\bSPEC\b", path.read_text()), f"{path.name} cites the SPEC, which is not in the repository"


def test_a_derivative_sentence_over_several_lines_is_kept_whole():
    doc = "f(x): a thing.\nDifferentiable: yes, where x is\npositive (else an error).\n>>> f(1.0)\n1.0"
    _, _, differentiable, examples = reference.parse_doc(doc)
    assert differentiable == "yes, where x is positive (else an error)."
    assert examples == [("f(1.0)", "1.0")]


@pytest.mark.parametrize("name", sorted(docs.DOCS))
def test_every_derivative_sentence_ends(name):
    differentiable = reference.parse_doc(docs.DOCS[name])[2]
    assert differentiable.endswith((".", ")", "yes", "no")) or not differentiable[-1].isalpha(), differentiable


def test_every_command_line_option_is_in_the_reference():
    # reference section 8 lists `dg run`'s options; one added to the CLI belongs there too
    from pathlib import Path
    from dsl.cli import FLAGS, VALUES
    text = (Path(__file__).resolve().parents[2] / "docs" / "reference.md").read_text(encoding="utf-8")
    tools = text[text.index("## 8. Tools"):text.index("## 9. Standard library")]
    missing = [option for option in (*FLAGS, *VALUES) if f"`{option}" not in tools]
    assert not missing, f"reference section 8 does not name {missing}"


def test_the_python_page_shows_every_parameter_of_the_interpreter():
    from pathlib import Path
    page = (Path(__file__).resolve().parents[2] / "docs" / "python.md").read_text(encoding="utf-8")
    shown = page[page.index("`dsl.Interpreter("):]
    shown = shown[:shown.index(")`")]
    missing = [p for p in inspect.signature(dsl.Interpreter.__init__).parameters if p != "self" and f"{p}=" not in shown]
    assert not missing, f"docs/python.md's Interpreter signature leaves out {missing}"
