"""Shared test helpers: run dg source in-process, catch its DgError, or run the `dg` command.

    def test_print(run):
        assert run("print(1 + 2)") == "3\\n"

    def test_error(run_error):
        err = run_error("let x = 1 / 0")
        assert err.kind == "value"
"""

import io
import os
import subprocess
import sys
from pathlib import Path

import pytest

import dsl
from dsl.errors import DgError

ROOT = Path(__file__).resolve().parent.parent


def run_dg(src, filename="<test>", **interp_kwargs):
    """Run dg source in a fresh Interpreter; return what it printed."""
    out = io.StringIO()
    dsl.Interpreter(stdout=out, **interp_kwargs).run(src, filename)
    return out.getvalue()


def error_of(src, filename="<test>", **interp_kwargs):
    """Run dg source that must fail; return its DgError (settled, as the CLI shows it)."""
    out = io.StringIO()
    with pytest.raises(DgError) as info:
        dsl.Interpreter(stdout=out, **interp_kwargs).run(src, filename)
    return info.value.settle()


def dg_command(*args, stdin=None, cwd=None, timeout=60):
    """Run `python -m dsl ARGS...` as a subprocess; return the CompletedProcess (text mode)."""
    env = dict(os.environ, PYTHONIOENCODING="utf-8")
    return subprocess.run([sys.executable, "-m", "dsl", *args], input=stdin, cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=timeout)


@pytest.fixture
def run():
    """run(src, **interpreter_options) -> stdout of the program."""
    return run_dg


@pytest.fixture
def run_error():
    """run_error(src, **interpreter_options) -> the DgError the program raises."""
    return error_of


@pytest.fixture
def dg():
    """dg(*args, stdin=None, cwd=None) -> subprocess.CompletedProcess of the dg command."""
    return dg_command


@pytest.fixture
def run_alone(monkeypatch):
    """The items of the iterations a compiled loop stopped at and ran alone (dsl/jit/loop_body.py,
    Driver._step), for the loop tests of test_jit_loops.py and test_jit_while.py."""
    from dsl.jit import loop_body
    items = []
    real = loop_body.Driver._step

    def spied(self, *args):
        items.append(args[1])
        return real(self, *args)
    monkeypatch.setattr(loop_body.Driver, "_step", spied)
    return items
