"""The REPL, driven through its real prompt_toolkit session (pipe input, dummy output),
plus the non-terminal mode through `dg repl < session` as a subprocess."""

import _thread
import asyncio
import io
import signal
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest
from prompt_toolkit.buffer import Buffer
from prompt_toolkit.completion import CompleteEvent
from prompt_toolkit.document import Document
from prompt_toolkit.history import FileHistory
from prompt_toolkit.input import create_pipe_input
from prompt_toolkit.output import DummyOutput

import dsl
from dsl.errors import DgError
from dsl import repl as R

NL = "\r"          # what the Enter key sends
CTRL_C = "\x03"
CTRL_D = "\x04"
ESC_ENTER = "\x1b\r"


@pytest.fixture(autouse=True)
def private_history(tmp_path, monkeypatch):
    """Never touch the real ~/.dg_history."""
    monkeypatch.setenv("DG_HISTORY", str(tmp_path / "history"))
    return tmp_path / "history"


class Session:
    """A REPL with captured output, its prompt_toolkit session, and its pipe input."""

    def __init__(self, inp, interp=None):
        self.out = io.StringIO()
        self.err = io.StringIO()
        self.interp = interp or dsl.Interpreter(stdout=self.out, keep_tape=True)
        self.repl = R.Repl(self.interp, out=self.out, err=self.err)
        self.inp = inp
        self.session = R.make_session(self.repl, input=inp, output=DummyOutput())

    def type(self, *keys):
        """Queue keystrokes."""
        for k in keys:
            self.inp.send_text(k)

    def run(self, *keys):
        """Type keys, then end the input (Ctrl-D, then a closed pipe) and run the prompt loop."""
        self.type(*keys, CTRL_D)
        self.inp.close()
        R.interact(self.repl, self.session)
        return self.out.getvalue(), self.err.getvalue()


@pytest.fixture
def session():
    """A fresh REPL session on a pipe."""
    with create_pipe_input() as inp:
        yield Session(inp)


# ---------------------------------------------------------------- entering input
def test_multiline_function_and_map_are_entered_line_by_line(session):
    out, err = session.run(
        "fn sq(x) {", NL, "return x * x", NL, "}", NL,
        "let m = {", NL, '"a": 1.0,', NL, '"b": 2.0}', NL,
        'sq(m["b"]) + m["a"]', NL)
    assert err == ""
    assert out.splitlines() == ["5.0"]
    # each multi-line input went in as one entry, indented by the Enter rule
    history = list(session.session.history.get_strings())
    assert "fn sq(x) {\n    return x * x\n}" in history
    assert session.repl.count == 3


def test_enter_rule_submits_complete_and_invalid_input_only():
    assert R.should_submit("let x = 1")
    assert not R.should_submit("fn f(x) {")
    assert not R.should_submit("let y = (1 +")
    assert R.should_submit('let s = "abc')        # a string cannot go on past the line: its error shows
    assert not R.should_submit('let s = "a{" + (')  # brackets inside a closed string do not count
    assert R.should_submit("let x = )")        # invalid: submitted so its error shows
    assert R.should_submit(":vars")
    assert R.should_submit("   ")


def test_escape_enter_adds_a_line_to_complete_input(session):
    out, err = session.run("let a = 1", ESC_ENTER, "let b = a + 1", NL, "b", NL)
    assert err == ""
    assert out.splitlines() == ["2"]
    assert session.repl.count == 2             # the two lets were one input


def test_echo_shows_values_readably_and_not_none(session):
    out, err = session.run(
        "struct Point { x, y }", NL,
        "Point(1.0, 2.0)", NL,
        '{"w": [1.0, 2.0], "n": 3}', NL,
        '(1, "s", true)', NL,
        '"text"', NL,
        "none", NL,
        'print("hi")', NL)
    assert err == ""
    assert out.splitlines() == ['Point(x=1.0, y=2.0)', '{"w": [1.0, 2.0], "n": 3}',
                                '(1, "s", true)', '"text"', "hi"]


def test_an_error_prints_in_dg_format_and_the_session_continues(session):
    out, err = session.run("let k = 2", NL, 'let bad = k - "a"', NL, "k * 3", NL)
    assert out.splitlines() == ["6"]
    assert err.splitlines() == [
        "error[type]: cannot subtract int and string",
        " --> <repl-2>:1:11",
        "  |",
        '1 | let bad = k - "a"',
        "  |           ^^^^^^^",
    ]
    assert "Traceback" not in err


def test_ctrl_c_at_the_prompt_drops_the_input(session):
    out, err = session.run("let dropped = 1", CTRL_C, "let kept = 2", NL, ":vars", NL)
    assert err == ""
    assert out.splitlines() == ["kept  int"]


@pytest.fixture
def python_sigint():
    """Python's KeyboardInterrupt handler for SIGINT during a test: interrupt_main does nothing
    while SIGINT is ignored, as it is when a script starts the test run in the background."""
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, previous)


def test_ctrl_c_interrupts_a_long_loop_and_keeps_the_session(session, python_sigint):
    interp = session.interp

    def press_ctrl_c():
        """Interrupt the main thread once the loop is clearly running."""
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            cell = interp.main.cells.get("n")
            if cell is not None and isinstance(cell.v, int) and cell.v > 1000:
                _thread.interrupt_main()
                return
            time.sleep(0.005)

    threading.Thread(target=press_ctrl_c, daemon=True).start()
    out, err = session.run("let n = 0", NL, "while true { n += 1 }", NL, "n > 1000", NL, "n = 5", NL, "n", NL)
    assert err.splitlines() == ["interrupted"]
    assert out.splitlines() == ["true", "5"]


def test_ctrl_d_leaves_and_quit_leaves(session):
    out, err = session.run("1 + 1", NL, ":quit", NL, "2 + 2", NL)
    assert out.splitlines() == ["2"]            # nothing after :quit runs
    assert session.repl.done


@pytest.mark.parametrize("terminal", [True, False])
def test_run_repl_colours_errors_only_on_a_terminal(monkeypatch, terminal):
    class Err(io.StringIO):
        def isatty(self):
            return terminal
    err = Err()
    monkeypatch.setattr(sys, "stderr", err)
    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.setenv("TERM", "xterm-256color")
    with create_pipe_input() as inp:
        inp.send_text("let y = sofmax(1.0)" + NL + CTRL_D)
        inp.close()
        R.run_repl(dsl.Interpreter(stdout=io.StringIO()), input=inp, output=DummyOutput())
    text = err.getvalue()
    assert "did you mean 'softmax'?" in text
    assert ("\x1b[" in text) == terminal


def test_run_repl_prints_a_banner_and_returns_zero(capsys):
    with create_pipe_input() as inp:
        inp.send_text("1 + 2" + NL + CTRL_D)
        inp.close()
        code = R.run_repl(dsl.Interpreter(), input=inp, output=DummyOutput())
    out = capsys.readouterr().out
    assert code == 0
    assert out.splitlines()[0].startswith(f"dg {dsl.__version__}")
    assert out.splitlines()[1:] == ["3"]


# ---------------------------------------------------------------- completion
def completions(session, text):
    """The completion texts the real session's completer offers after `text`."""
    found = session.session.completer.get_completions(Document(text), CompleteEvent(completion_requested=True))
    return [c.text for c in found]


@pytest.fixture
def stocked(tmp_path, monkeypatch, session):
    """A session with a module, a struct, a map and a variable defined."""
    (tmp_path / "nn.dg").write_text("fn linear_init(n) { return zeros((n,)) }\nlet linear_scale = 2.0\n"
                                    "fn relu6(x) { return x }\n")
    monkeypatch.chdir(tmp_path)
    session.interp.run('import nn\nstruct Point { x, yy }\nlet p = Point(1.0, 2.0)\n'
                       'let m = {"alpha": 1.0, "beta": 2.0, "alps": 3.0}\nlet learning_rate = 0.1\n')
    return session


def test_completion_of_keywords(stocked):
    assert completions(stocked, "whi") == ["while"]
    assert "continue" in completions(stocked, "x = 1; con")


def test_completion_of_builtins(stocked):
    assert completions(stocked, "let f = value_a") == ["value_and_grad"]
    assert completions(stocked, "log_so") == ["log_softmax"]
    assert completions(stocked, "log_s") == ["log_sigmoid", "log_softmax"]


def test_completion_of_names_in_scope(stocked):
    assert completions(stocked, "1 + learn") == ["learning_rate"]


def test_completion_of_module_members(stocked):
    assert completions(stocked, "nn.lin") == ["linear_init", "linear_scale"]
    assert completions(stocked, "let y = nn.re") == ["relu6"]


def test_completion_of_struct_fields(stocked):
    assert completions(stocked, "p.") == ["x", "yy"]
    assert completions(stocked, "p.y") == ["yy"]


def test_completion_of_map_keys(stocked):
    assert completions(stocked, 'm["al') == ['alpha"]', 'alps"]']
    assert completions(stocked, 'print(m["b') == ['beta"]']


def test_no_completion_inside_strings_comments_or_of_unknown_things(stocked):
    assert completions(stocked, 'print("whi') == []
    assert completions(stocked, "# whi") == []
    assert completions(stocked, "q.") == []
    assert completions(stocked, 'learning_rate["a') == []


def test_tab_completes_in_the_running_prompt(stocked):
    buffer = stocked.session.default_buffer

    def type_with_tab():
        """Type a prefix and Tab, wait for the completion to land, then submit."""
        stocked.type('m["be', "\t")
        deadline = time.monotonic() + 10
        while buffer.text != 'm["beta"]' and time.monotonic() < deadline:
            time.sleep(0.01)
        stocked.type(NL, CTRL_D)
        stocked.inp.close()

    threading.Thread(target=type_with_tab, daemon=True).start()
    R.interact(stocked.repl, stocked.session)
    assert stocked.out.getvalue().splitlines() == ["2.0"]


# ---------------------------------------------------------------- highlighting, history
def test_the_prompt_highlights_with_the_dg_lexer(session):
    lines = session.session.lexer.lex_document(Document('let g = grad(f)  # note'))
    styles = {text: style for style, text in lines(0)}
    assert "keyword" in styles["let"]
    assert "name.builtin" in styles["grad"]
    assert "comment" in styles["# note"]


def test_history_goes_to_dg_history_and_feeds_auto_suggest(session, private_history):
    session.run("let learning_rate = 0.1", NL)
    assert "let learning_rate = 0.1" in private_history.read_text()

    with create_pipe_input() as inp:
        later = Session(inp)
        history = later.session.history
        assert isinstance(history, FileHistory)

        async def load():
            """Load the history file the way the prompt does when it starts."""
            async for _ in history.load():
                pass
        asyncio.run(load())
        suggestion = later.session.auto_suggest.get_suggestion(Buffer(history=history), Document("let lear"))
    assert suggestion is not None and suggestion.text == "ning_rate = 0.1"


def test_history_path_expands_the_home_directory(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("DG_HISTORY", "~/hist/dg")
    assert R.history_path() == str(tmp_path / "hist" / "dg")
    assert isinstance(R.make_history(), FileHistory)
    assert (tmp_path / "hist" / "dg").exists()
    monkeypatch.delenv("DG_HISTORY")
    assert R.history_path() == str(tmp_path / ".dg_history")


# ---------------------------------------------------------------- commands
def test_help_vars_type_time_and_unknown_commands(session):
    out, err = session.run(
        ":help", NL,
        "let w = zeros((3, 4))", ESC_ENTER, 'let cfg = {"lr": 0.1}', ESC_ENTER, "let t = (1, 2)", NL,
        ":vars", NL,
        ":type w > 0", NL,
        ":time sum(w) + 1", NL,
        ":frobnicate", NL)
    lines = out.splitlines()
    assert ":tape dot FILE" in out and ":load FILE" in out
    assert "w    tensor (3, 4)" in lines
    assert "cfg  map (1 key)" in lines
    assert "t    tuple (2 elements)" in lines
    assert "tensor (3, 4) bool" in lines
    timed = lines.index("1.0")
    assert lines[timed + 1].startswith("time: ") and lines[timed + 1].endswith(("s", "ms", "µs"))
    assert err.splitlines() == ["unknown command ':frobnicate'; :help lists the commands"]


def test_load_runs_a_file_and_reset_forgets_names(session, tmp_path):
    script = tmp_path / "lib.dg"
    script.write_text("fn triple(x) { return 3 * x }\nlet loaded = true\n")
    out, err = session.run(f":load {script}", NL, "triple(2)", NL, ":reset", NL, "triple(2)", NL,
                           ":load /no/such/file.dg", NL)
    assert out.splitlines() == ["6", "the session is reset"]
    assert "error[name]" in err and "'triple' is not defined" in err
    assert "cannot read /no/such/file.dg" in err


def test_tape_shows_struct_field_and_map_lookup_after_a_gradient_over_a_map_of_structs(session, tmp_path):
    dot = tmp_path / "tape.dot"
    out, err = session.run(
        "struct Linear { w, b }", NL,
        'let params = {"hidden": Linear(w=[1.0, 2.0], b=0.5), "out": Linear(w=3.0, b=1.0)}', NL,
        "fn loss(p) {", NL,
        'let h = sum(p["hidden"].w) + p["hidden"].b', NL,
        'return h * p["out"].w', NL,
        "}", NL,
        "let g = grad(loss)(params)", NL,
        ":tape", NL,
        f":tape dot {dot}", NL)
    assert err == ""
    label, *rows = out.splitlines()
    assert label == "the tape of grad(loss):"
    assert rows[0].split() == ["#", "op", "inputs", "shape", "location", "detail"]
    by_op = {}
    for row in rows[1:-1]:
        by_op.setdefault(row.split()[1], []).append(row)
    assert by_op["Parameter"][0].split()[:4] == ["0", "Parameter", "-", "map"]
    hidden = [r for r in by_op["MapLookup"] if 'key "hidden" (0 of 2)' in r]
    out_key = [r for r in by_op["MapLookup"] if 'key "out" (1 of 2)' in r]
    assert hidden and out_key
    assert any("field w (0 of 2)" in r and "(2,)" in r for r in by_op["StructField"])
    assert any("field b (1 of 2)" in r for r in by_op["StructField"])
    # the read of p["out"].w: line 3 of that input, after the 4 spaces the Enter rule indented
    assert any("<repl-3>:3:16" in r for r in out_key)
    assert "Sum" in by_op and "Mul" in by_op
    assert rows[-1] == f"wrote the tape ({len(rows) - 2} nodes) to {dot}"
    text = dot.read_text()
    assert text.startswith('digraph "tape" {') and "MapLookup" in text and "n0 -> n1" in text


def test_tape_shows_what_the_newest_transformation_recorded(session):
    out, err = session.run(
        "fn f(x) { return sin(x) * x }", NL,
        "let t = jvp(f, (1.0,), (1.0,))", NL, ":tape", NL,
        "let p = vjp(f, 2.0)", NL, ":tape", NL,
        "let v = vmap(f)([1.0, 2.0])", NL, ":tape", NL,
        "let jf = jit(f)", NL, "let y = jf(3.0)", NL, ":tape", NL,
        "let hv = jvp(grad(f), (1.0,), (1.0,))", NL, ":tape", NL)
    assert err == ""
    lines = out.splitlines()
    assert lines[0] == "jvp(f), which keeps no tape: forward mode computes each tangent as it goes"
    at = lines.index("the tape of vjp(f):")
    assert [row.split()[1] for row in lines[at + 2:at + 5]] == ["Parameter", "Sin", "Mul"]
    at = lines.index("the recording vmap staged of f on one example:")
    assert [row.split()[1] for row in lines[at + 2:at + 5]] == ["Arg", "Sin", "Mul"]
    at = lines.index("the recording jit staged of f:")
    assert [row.split()[1] for row in lines[at + 2:at + 5]] == ["Arg", "Sin", "Mul"]
    # a gradient inside jvp records its tape (with tangents flowing through it): that is shown
    assert lines[-5] == "the tape of grad(f):" and lines[-1].split()[1] == "Mul"


def test_tape_before_any_gradient_says_so(session):
    out, err = session.run(":tape", NL, ":tape sideways", NL)
    assert err.splitlines() == ["no gradient has been computed yet", "usage: :tape, or :tape dot FILE"]


# ---------------------------------------------------------------- not a terminal
SESSION = """\
fn sq(x) {
    return x * x
}
let p = {"a": 2.0}
sq(p["a"])
let bad = 1 + "a"
:type p
"a" + "b"
"""


def test_piped_input_runs_without_the_ui_and_echoes(dg, tmp_path):
    result = dg("repl", stdin=SESSION, cwd=tmp_path)
    assert result.stdout.splitlines() == ["4.0", "map (1 key)", '"ab"']
    assert result.stderr.startswith("error[type]: cannot add int and string\n --> <repl-4>:1:11")
    assert result.returncode == 1             # an input failed


def test_piped_input_without_errors_exits_zero_and_reports_an_unfinished_statement(dg, tmp_path):
    good = dg("repl", stdin="let x = 2\nx * 21\n:quit\nx\n", cwd=tmp_path)
    assert (good.stdout, good.stderr, good.returncode) == ("42\n", "", 0)
    unfinished = dg("repl", stdin="let x = [1.0,\n", cwd=tmp_path)
    assert unfinished.returncode == 1
    assert "error[syntax]" in unfinished.stderr


def test_load_and_tape_dot_answer_paths_that_are_no_file():
    # a NUL in the path, and a "file" that never ends: a one-line complaint each, the session goes on
    out, err = io.StringIO(), io.StringIO()
    repl = R.Repl(dsl.Interpreter(stdout=out, keep_tape=True), out=out, err=err)
    for line in [":load a\0b", ":load /dev/zero", "grad(fn(x) => x * x)(3.0)", ":tape dot a\0b", "1 + 1"]:
        repl.execute(line)
    assert err.getvalue().splitlines() == [
        "cannot read a\0b: a path cannot hold a NUL character",
        "cannot read /dev/zero: it is longer than 64 MiB (or never ends)",
        "cannot write 'a\\x00b': a path cannot hold a NUL character"]
    assert out.getvalue().splitlines()[-1] == "2"


def test_dg_run_and_run_file_of_a_file_that_never_ends_stop(dg):
    done = dg("run", "/dev/zero")
    assert done.returncode == 2 and "longer than 64 MiB (or never ends)" in done.stderr
    with pytest.raises(DgError, match="never ends"):
        dsl.Interpreter().run_file("/dev/zero")


def test_vars_names_struct_types_and_functions_by_what_they_are():
    out = io.StringIO()
    repl = R.Repl(dsl.Interpreter(stdout=out), out=out, err=io.StringIO())
    for line in ["struct P { a, b }", "let p = P(1.0, 2.0)", "fn f(x, y=2) { return x }", ":vars", ":type P"]:
        repl.execute(line)
    lines = out.getvalue().splitlines()
    assert "P  struct type P { a, b }" in lines and "p  P" in lines
    assert "f  function f(x, y=2)" in lines and lines[-1] == "struct type P { a, b }"


@pytest.mark.skipif(not Path("/proc/self/statm").exists(), reason="reads /proc")
def test_ctrl_c_of_a_runaway_gradient_gives_its_memory_back(python_sigint):
    import gc

    def rss():
        with open("/proc/self/statm") as fh:
            return int(fh.read().split()[1]) * 4096

    out, err = io.StringIO(), io.StringIO()
    # the timeout only guards the machine should Ctrl-C be lost: the test then fails, not the host
    repl = R.Repl(dsl.Interpreter(stdout=out, keep_tape=True, timeout=60), out=out, err=err)
    repl.execute("let t = ones((1000,))\ngrad(fn(x) => sum(x * x))(t)")
    gc.collect()
    before = rss()
    threading.Timer(2.0, _thread.interrupt_main).start()      # Ctrl-C after the tape has grown
    repl.execute("grad(fn(x) { let s = x\n while true { s = s * 1.0000001 + x }\n return sum(s) })(t)")
    assert err.getvalue() == "interrupted\n"
    assert rss() - before < 100e6
    assert repl.interp.last_tape is not None and len(repl.interp.last_tape) < 10     # the finished one's


def test_a_large_tensor_echoes_as_numpy_users_read_one_and_prints_in_full():
    # a tensor whose literal fits on a line echoes as the literal (the reference's examples show
    # them so); a larger one with its shape, in aligned columns to 8 digits, elided
    out = io.StringIO()
    repl = R.Repl(dsl.Interpreter(stdout=out, seed=0), out=out, err=io.StringIO())
    for line in ["[[1.0, 2.5], [-4.0, 0.5]]", "[[1.0, 2.5, 3.0, 4.0, 5.0, 6.0], [-4.0, 0.123456789123, 1.0, 2.0, 3.0, 4.0]] * 3.0",
                 "print([1.0, 1.0 / 3.0])", "zeros((50, 50))", "(ones((2,)), 3)"]:
        repl.execute(line)
    lines = out.getvalue().splitlines()
    assert lines[0] == "[[1.0, 2.5], [-4.0, 0.5]]"
    want = np.array2string(3.0 * np.array([[1.0, 2.5, 3.0, 4.0, 5.0, 6.0], [-4.0, 0.123456789123, 1.0, 2.0, 3.0, 4.0]]),
                           separator=", ", precision=8, max_line_width=80)
    assert lines[1] == "tensor (2, 6)" and "\n".join(lines[2:2 + want.count("\n") + 1]) == want
    assert "0.37037037," in want
    lines = lines[:2] + lines[2 + want.count("\n") + 1 - 2:]
    assert lines[4] == "[1.0, 0.3333333333333333]"          # print: every digit
    assert lines[5] == "tensor (50, 50)" and "..." in out.getvalue() and len(lines) < 24
    assert lines[-1] == "([1.0, 1.0], 3)"
