"""Ctrl-C: SIGINT stops `dg run` with exit code 130 and one line, no traceback; the REPL keeps
its session (what the interrupted input had assigned stays, as in Python)."""

import io
import os
import select
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

import dsl
from dsl.base import sandbox

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals and ptys")

LOOP = 'print("ready")\nlet n = 0\nwhile true { n += 1 }\n'


def default_sigint():
    """In a child: Ctrl-C does what it does by default, even when this test run ignores it (a test
    runner started in the background by a non-interactive shell does, and Python then installs no
    KeyboardInterrupt handler in the children it starts)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def interrupted_run(*args, stdin=None, tmp_path):
    """Start `dg ARGS`, wait for it to print "ready", send SIGINT; return (code, stdout, stderr)."""
    env = dict(os.environ, PYTHONUNBUFFERED="1", PYTHONIOENCODING="utf-8")
    proc = subprocess.Popen([sys.executable, "-m", "dsl", *args], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, cwd=tmp_path,
                            preexec_fn=default_sigint)
    if stdin is not None:
        proc.stdin.write(stdin.encode())
    proc.stdin.close()
    proc.stdin = None
    try:
        assert proc.stdout.readline() == b"ready\n"
        time.sleep(0.3)                      # well inside the loop
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=30)
    finally:
        proc.kill()
    return proc.returncode, out.decode(), err.decode()


def test_sigint_stops_dg_run_with_130_and_one_line(tmp_path):
    script = tmp_path / "loop.dg"
    script.write_text(LOOP)
    code, out, err = interrupted_run("run", str(script), tmp_path=tmp_path)
    assert code == 130
    assert err == "dg: interrupted\n"
    assert out == ""


def test_sigint_stops_a_program_read_from_standard_input_or_given_with_c(tmp_path):
    assert interrupted_run("run", "-", stdin=LOOP, tmp_path=tmp_path)[:3:2] == (130, "dg: interrupted\n")
    assert interrupted_run("-c", LOOP, tmp_path=tmp_path)[:3:2] == (130, "dg: interrupted\n")


def test_sigint_stops_a_run_on_the_big_stack_thread(tmp_path):
    # with a raised --max-depth the program runs on a helper thread; Ctrl-C must reach it
    script = tmp_path / "loop.dg"
    script.write_text(LOOP)
    code, _, err = interrupted_run("run", "--max-depth", "100000", str(script), tmp_path=tmp_path)
    assert (code, err) == (130, "dg: interrupted\n")


def test_sigint_during_numpy_work_and_deep_calls_is_still_one_line(tmp_path):
    script = tmp_path / "work.dg"
    script.write_text('print("ready")\nlet x = randn((300, 300))\n'
                      'fn f(n, x) { if n == 0 { return x } return f(n - 1, x @ x * 0.001) }\n'
                      'while true { f(500, x) }\n')
    code, _, err = interrupted_run("run", str(script), tmp_path=tmp_path)
    assert (code, err) == (130, "dg: interrupted\n")


def test_an_interrupted_run_leaves_the_interpreter_usable():
    out = io.StringIO()
    interp = dsl.Interpreter(stdout=out, max_depth=100, files="none")
    calls = []

    def host():
        calls.append(1)
        if len(calls) == 50:
            raise KeyboardInterrupt
        return 0.0

    interp.define("host", host)
    before = sys.getrecursionlimit()
    with pytest.raises(KeyboardInterrupt):
        interp.run("let kept = 7\nfn f(n) { host()\n return f(n + 1) }\nf(0)")
    assert interp.get("kept") == 7                      # what ran before Ctrl-C stays
    assert sys.getrecursionlimit() == before and sandbox.current().everything
    # the depth counter starts from zero again: 99 nested calls still fit under max_depth=100
    interp.run("fn g(n) { if n == 0 { return 0 } return g(n - 1) }\nprint(g(98))")
    assert out.getvalue() == "0\n"


# ---------------------------------------------------------------- the REPL, under a real terminal
def _read_until(fd, token, buf, count=1, timeout=20):
    """Read from the pty until `token` occurs `count` times in `buf`; return the bytes read so far."""
    end = time.monotonic() + timeout
    while buf.count(token) < count and time.monotonic() < end:
        ready, _, _ = select.select([fd], [], [], 0.1)
        if ready:
            try:
                buf += os.read(fd, 4096)
            except OSError:
                break
    return buf


def test_ctrl_c_in_the_repl_under_a_terminal_keeps_the_session(tmp_path):
    pty = pytest.importorskip("pty")
    pid, fd = pty.fork()
    if pid == 0:                                      # the child: `dg repl` on the pty
        default_sigint()
        os.environ["DG_HISTORY"] = str(tmp_path / "history")
        os.environ["PROMPT_TOOLKIT_NO_CPR"] = "1"     # no cursor-position queries to wait for
        os.execv(sys.executable, [sys.executable, "-m", "dsl", "repl"])
    try:
        prompt = b"dg>"                               # prompt_toolkit draws the space as a cursor move
        buf = _read_until(fd, prompt, b"")
        assert prompt in buf, buf
        os.write(fd, b"let x = 41\r")
        buf = _read_until(fd, b"\x1b[?2004l", buf)             # the input left the prompt: it runs
        buf = _read_until(fd, prompt, buf[buf.rindex(b"\x1b[?2004l"):])
        os.write(fd, b"while true { x = 41 }\r")
        buf = _read_until(fd, b"\x1b[?2004l", buf[buf.rindex(prompt):])
        assert b"\x1b[?2004l" in buf, buf
        time.sleep(0.5)                                         # inside the loop by now
        os.write(fd, b"\x03")                         # Ctrl-C typed at the terminal: SIGINT
        buf = _read_until(fd, b"interrupted", buf)
        assert b"interrupted" in buf and b"Traceback" not in buf, buf
        os.write(fd, b"print(x + 1)\r")
        buf = _read_until(fd, b"42\r\n", buf)
        assert b"42\r\n" in buf, buf
        os.write(fd, b":quit\r")
        deadline = time.monotonic() + 20
        done = 0
        while time.monotonic() < deadline:
            done, status = os.waitpid(pid, os.WNOHANG)
            if done:
                break
            _read_until(fd, b"\x00", b"", timeout=0.2)
        assert done and os.waitstatus_to_exitcode(status) == 0
    finally:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        os.close(fd)


def test_the_sigint_tests_pass_when_the_test_runner_ignores_sigint(tmp_path):
    # the situation of CI scripts: pytest itself started with SIGINT ignored
    if os.environ.get("DG_INNER_SIGINT_RUN"):
        pytest.skip("already inside the run with SIGINT ignored")
    env = dict(os.environ, DG_INNER_SIGINT_RUN="1")
    code = ("import signal, subprocess, sys\n"
            "signal.signal(signal.SIGINT, signal.SIG_IGN)\n"
            "sys.exit(subprocess.call([sys.executable, '-m', 'pytest', '-q', '-p', 'no:cacheprovider', "
            f"'{__file__}', '{Path(__file__).parents[1] / 'tools' / 'test_repl.py'}', '-k', "
            "'sigint_stops_dg_run or ctrl_c_in_the_repl or ctrl_c_interrupts_a_long_loop']))\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, env=env)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    assert "3 passed" in proc.stdout
