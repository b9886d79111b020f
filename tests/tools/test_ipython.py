"""The IPython extension, run in IPython's own test shell (skipped without IPython)."""

import numpy as np
import pytest

pytest.importorskip("IPython")

from IPython.testing.globalipapp import start_ipython  # noqa: E402

from dsl.errors import DgError  # noqa: E402
from dsl.ipython import parse_options  # noqa: E402


@pytest.fixture(scope="module")
def shell():
    """IPython's test shell with the extension loaded."""
    ip = start_ipython()
    ip.run_line_magic("load_ext", "dsl.ipython")
    return ip


@pytest.fixture
def fresh(shell):
    """The shell with a fresh dg interpreter."""
    shell.run_line_magic("dg", "--reset")
    return shell


def test_cell_magic_pulls_in_and_pushes_out_numpy_values(fresh):
    fresh.user_ns["xs"] = np.arange(3)
    result = fresh.run_cell("%%dg --in xs --out doubled,total\nlet doubled = xs * 2\nlet total = sum(doubled)\n"
                            "total + 1")
    assert result.success
    assert result.result == 7.0
    assert type(fresh.user_ns["doubled"]) is np.ndarray
    assert fresh.user_ns["doubled"].tolist() == [0.0, 2.0, 4.0]
    assert fresh.user_ns["total"] == 6.0


def test_line_magic_shares_the_interpreter_and_returns_python_values(fresh):
    assert fresh.run_cell('%%dg\nstruct Linear { w, b }\nlet layer = Linear(w=[1.0, 2.0], b=0.5)').success
    value = fresh.run_line_magic("dg", "layer.w * 2")
    assert type(value) is np.ndarray and value.tolist() == [2.0, 4.0]
    fresh.run_cell("got = %dg --out layer grad(fn(l) => sum(l.w) * l.b)(layer)")
    grad = fresh.user_ns["got"]
    assert grad._name == "Linear" and grad.w.tolist() == [0.5, 0.5] and grad.b == 3.0
    assert fresh.user_ns["layer"].b == 0.5


def test_printing_goes_to_the_cell_output(fresh, capsys):
    fresh.run_cell('%%dg\nprint("hello from dg", 1 + 1)')
    assert "hello from dg 2" in capsys.readouterr().out


def test_a_dg_error_fails_the_cell_and_shows_in_dg_format_without_a_traceback(fresh, capsys):
    capsys.readouterr()
    result = fresh.run_cell('%%dg\nlet z = 1\nlet w = z + "a"\n')
    assert not result.success
    assert isinstance(result.error_in_exec, DgError)
    shown = capsys.readouterr()
    text = shown.out + shown.err
    assert "error[type]: cannot add int and string" in text
    assert "<cell-" in text and ":2:9" in text
    assert "Traceback" not in text and "dsl/" not in text
    # the interpreter keeps its state after an error
    assert fresh.run_line_magic("dg", "z") == 1


def test_dgerror_from_plain_python_cells_also_shows_in_dg_format(shell, capsys):
    capsys.readouterr()
    result = shell.run_cell("import dsl\ndsl.Interpreter().run('let v = [1.0] @ [[1.0, 2.0], [3.0, 4.0]]', 'nb.dg')")
    assert not result.success
    text = "".join(capsys.readouterr())
    assert "error[shape]" in text and "--> nb.dg:1:9" in text
    assert "Traceback" not in text


def test_missing_notebook_variables_and_bad_options(fresh, capsys):
    result = fresh.run_cell("%dg --in nothing_here 1")
    assert not result.success and result.error_in_exec.kind == "name"
    result = fresh.run_cell("%dg --frobnicate 1")
    assert not result.success
    assert "unknown option --frobnicate" in "".join(capsys.readouterr())


def test_option_parsing():
    assert parse_options("--in a,b -o c --reset -x + 1") == (
        {"in": ["a", "b"], "out": ["c"], "reset": True}, "-x + 1")
    assert parse_options("--in=a -- -i") == ({"in": ["a"], "out": [], "reset": False}, "-i")
    assert parse_options("-1 + 2") == ({"in": [], "out": [], "reset": False}, "-1 + 2")


def test_the_shared_interpreter_is_reachable_from_python(fresh):
    from dsl.ipython import interpreter
    fresh.run_line_magic("dg", "let shared = 41")
    interp = interpreter(fresh)
    assert interp.get("shared") == 41
    interp.set("shared", 1)
    assert fresh.run_line_magic("dg", "shared + 1") == 2
