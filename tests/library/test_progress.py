"""progress(iterable, label=""): a tqdm bar on a terminal's standard error (or a notebook), silence elsewhere."""

import io
import subprocess
import sys

import numpy as np
import pytest

import dsl
from tqdm import tqdm


class FakeTerminal(io.StringIO):
    """A standard error that says it is a terminal."""

    def isatty(self):
        """Claim to be a terminal."""
        return True


def run_with_stderr(src, stream, monkeypatch):
    """Run dg source with sys.stderr replaced; return (printed stdout, the interpreter)."""
    monkeypatch.setattr(sys, "stderr", stream)
    out = io.StringIO()
    interp = dsl.Interpreter(stdout=out)
    interp.run(src)
    return out.getvalue(), interp


def test_items_pass_through_and_nothing_is_written_when_not_a_terminal(monkeypatch):
    err = io.StringIO()
    out, _ = run_with_stderr('let s = 0\nfor i in progress(range(5), "train") { s += i }\nprint(s)',
                             err, monkeypatch)
    assert out == "10\n" and err.getvalue() == ""


def test_a_terminal_gets_a_bar_with_count_percentage_rate_and_a_final_line(monkeypatch):
    term = FakeTerminal()
    out, _ = run_with_stderr('for i in progress(range(4), "train") { print(i) }', term, monkeypatch)
    assert out == "0\n1\n2\n3\n"
    text = term.getvalue()
    assert text.startswith("\rtrain")
    final = text.rstrip("\n").split("\r")[-1]
    assert "train" in final and "4/4" in final and "100%" in final and "it/s" in final
    assert "|" + "#" * 10 + "|" in final or "|" + "\u2588" * 10 + "|" in final     # a full bar
    assert text.endswith("\n") and text.count("\n") == 1


def test_the_bar_ends_its_line_when_the_loop_breaks(monkeypatch):
    term = FakeTerminal()
    out, _ = run_with_stderr('for i in progress(range(100), "x") { if i == 3 { break } }\nprint("after")',
                             term, monkeypatch)
    assert out == "after\n"
    final = term.getvalue().rstrip("\n").split("\r")[-1]
    assert term.getvalue().endswith("\n") and "4/100" in final     # items 0..3 were taken


def test_redraws_are_throttled(monkeypatch):
    term = FakeTerminal()
    run_with_stderr("for i in progress(range(3000)) { }", term, monkeypatch)
    assert 2 <= term.getvalue().count("\r") < 50


@pytest.mark.parametrize("iterable, expected", [
    ("(1, 2, 3)", [1, 2, 3]),
    ('{"a": 1, "b": 2}', ["a", "b"]),
    ('"hi"', ["h", "i"]),
])
def test_progress_wraps_any_iterable(iterable, expected, monkeypatch):
    monkeypatch.setattr(sys, "stderr", FakeTerminal())
    interp = dsl.Interpreter()
    interp.run(f"let got = ()\nfor v in progress({iterable}) {{ got = got + (v,) }}")
    assert list(interp.lookup("got")) == expected


def test_progress_over_tensor_rows_and_batches(monkeypatch):
    term = FakeTerminal()
    _, interp = run_with_stderr(
        "let n = 0\nfor row in progress(eye(3)) { n += sum(row) }\n"
        "let m = 0\nfor xb, yb in progress(batches(zeros((10, 2)), zeros((10,)), 4), \"epoch\") "
        "{ m += len(xb) }", term, monkeypatch)
    assert interp.lookup("n") == 3.0 and interp.lookup("m") == 10
    assert "3/3" in term.getvalue() and "3/3" in term.getvalue().split("epoch")[-1]


def test_type_and_label_errors(run_error):
    assert dsl.Interpreter().run("type(progress(range(2)))") == "iterator"
    assert run_error("progress(range(2), 5)").kind == "type"
    assert run_error("progress(3)").kind == "type"


def test_unknown_length_shows_the_count_and_rate(monkeypatch):
    term = FakeTerminal()
    run_with_stderr('for i in progress(progress(range(7)), "outer") { }', term, monkeypatch)
    final = [line for line in term.getvalue().split("\r") if line.startswith("outer")][-1]
    assert "7it" in final and "it/s" in final and "%" not in final


def test_a_known_length_shows_the_time_left(monkeypatch):
    term = FakeTerminal()
    run_with_stderr('for i in progress(range(5), "t") { }', term, monkeypatch)
    assert "<" in term.getvalue().split("\r")[-1]          # [elapsed<left, rate]


def test_a_notebook_session_draws_although_stderr_is_no_terminal(monkeypatch):
    err = io.StringIO()
    monkeypatch.setattr(sys, "stderr", err)
    interp = dsl.Interpreter(stdout=io.StringIO())
    interp.progress_live = True
    interp.run('for i in progress(range(3), "nb") { }')
    assert "nb: 100%" in err.getvalue() and "3/3" in err.getvalue()


def test_dg_run_does_not_import_prompt_toolkit():
    code = ("import sys, dsl\ni = dsl.Interpreter()\ni.run('print(1)')\nprint('tqdm' in sys.modules)\n"
            "i.run('for i in progress(range(3)) { }')\n"
            "print('prompt_toolkit' in sys.modules, 'tqdm' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.stdout.split("\n")[1:3] == ["False", "False True"], out.stderr


def test_progress_returns_items_unchanged():
    got = dsl.Interpreter().run("let t = ()\nfor x in progress(([1.0, 2.0], 3)) { t = t + (x,) }\nt")
    assert np.array_equal(got[0], [1.0, 2.0]) and got[1] == 3


def test_print_inside_a_progress_loop_erases_and_redraws_the_bar(monkeypatch):
    # the bar and the printed lines share one terminal: print must not land on the bar's line
    term = FakeTerminal()
    monkeypatch.setattr(sys, "stderr", term)
    interp = dsl.Interpreter(stdout=term)
    interp.run('for i in progress(range(2), "t") { print("line", i) }')
    text = term.getvalue()
    for k in (0, 1):
        before = text.split(f"line {k}\n", 1)[0].rsplit("\r", 2)
        assert before[-1] == "" and before[-2].strip() == "", "the bar's line is cleared before the print"
    after_first = text.split("line 0\n", 1)[1]
    assert after_first.startswith("\rt:  50%"), "the bar is redrawn after the printed line"
    assert not tqdm._instances
