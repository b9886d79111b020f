"""Run one fuzz input through the whole pipeline and judge the outcome.

`outcome(text)` parses, resolves (`dg check`), compiles and runs `text` in a
fresh interpreter with tight limits, and returns "ok" or the error kind.
Anything that is neither a normal result nor a well-formed DgError (a Python
exception, an error without a location inside its source, a hang) fails an
assertion: that is a bug in dg, and the input belongs in tests/fuzz_corpus/.
"""

import io
import os
import signal
import warnings
import zlib
from pathlib import Path

import numpy as np

import dsl
from dsl.core.tape import Box
from dsl.errors import KINDS, DgError
from dsl.core.printing import show
from dsl.core.values import Function, Module, Struct, StructDef

CORPUS = Path(__file__).resolve().parent / "fuzz_corpus"

# Limits for fuzz runs: generated infinite loops, deep recursions and huge
# tensors end quickly with `limit` errors instead of slowing the suite.
FUZZ_LIMITS = dict(max_steps=10_000, timeout=0.3, max_depth=200, max_tensor_elements=200_000)
HANG_SECONDS = 20       # wall-clock time after which an input counts as a hang


class Hang(BaseException):
    """An input ran past HANG_SECONDS (BaseException: nothing in dg may swallow it)."""


def fuzz_examples(default):
    """How many examples a fuzz test runs: `default` in CI; locally DG_FUZZ_EXAMPLES=N runs at
    least N, and DG_FUZZ_SCALE=K runs K times the CI number (both: the larger)."""
    count = os.environ.get("DG_FUZZ_EXAMPLES")
    scale = os.environ.get("DG_FUZZ_SCALE")
    return max(default, int(count) if count else 0, default * int(scale) if scale else 0)


def long_run():
    """Whether a long local fuzz run was asked for (DG_FUZZ_EXAMPLES or DG_FUZZ_SCALE is set):
    then the examples are fresh random ones, not CI's fixed set."""
    return bool(os.environ.get("DG_FUZZ_EXAMPLES") or os.environ.get("DG_FUZZ_SCALE"))


def check_error(err, what):
    """Assert that `err` is a proper DgError: a known kind, a location inside its source, printable."""
    assert isinstance(err, DgError), f"{what}: not a DgError: {err!r}"
    assert err.kind in KINDS and err.kind != "internal", f"{what}: bad kind {err.kind!r}"
    assert isinstance(err.message, str) and (err.message or err.kind == "user"), f"{what}: empty message"
    span = err.span
    assert span is not None, f"{what}: error without a location: {err.kind}: {err.message}"
    assert span.source is not None, f"{what}: error location without a source: {err.message}"
    lines = span.source.text.split("\n")
    assert 1 <= span.line <= len(lines), (
        f"{what}: line {span.line} outside 1..{len(lines)}: {err.kind}: {err.message}")
    width = len(lines[span.line - 1])
    assert 1 <= span.column <= width + 1, (
        f"{what}: column {span.column} outside 1..{width + 1} of line {span.line}: {err.message}")
    text = str(err.settle())
    assert text.startswith(f"error[{err.kind}]: "), f"{what}: badly formatted: {text[:200]}"


def check_value(value, what):
    """Assert that a result is made of dg values only: no leaked Box, numpy scalar or Python object."""
    stack = [value]
    while stack:
        v = stack.pop()
        t = type(v)
        if t in (bool, int, float, str, type(None), range, np.float64, np.bool_):
            continue        # numpy's float64 and bool_ are Python float and bool to dg (type() agrees)
        if t is np.ndarray:
            assert v.dtype in (np.float64, np.bool_), f"{what}: a tensor of dtype {v.dtype}"
        elif t is tuple:
            stack.extend(v)
        elif t is dict:
            assert all(type(k) in (str, int, bool) for k in v), f"{what}: a map key {list(v)!r}"
            stack.extend(v.values())
        elif t is Struct:
            stack.extend(v.vals)
        else:
            assert t in (Function, StructDef, Module) or getattr(v, "dg_iterable", False) or (
                callable(v) and t is not Box), f"{what}: not a dg value: {t.__name__}"


def _alarm(signum, frame):
    """SIGALRM handler: the input hangs."""
    raise Hang(f"no answer after {HANG_SECONDS} seconds")


def outcome(text, filename="fuzz.dg", limits=None, **options):
    """Check then run `text`; return "ok" or the DgError's kind; fail on anything else."""
    settings = dict(FUZZ_LIMITS, files="none", **(limits or {}))
    settings.update(options)
    old = signal.signal(signal.SIGALRM, _alarm)
    signal.setitimer(signal.ITIMER_REAL, HANG_SECONDS)
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)   # numpy's warnings would reach the user's terminal
        try:
            return _outcome(text, filename, settings)
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, old)


def _outcome(text, filename, settings):
    """`outcome` without the watchdog."""
    checker = dsl.Interpreter(stdout=io.StringIO(), seed=0, **settings)
    for problem in checker.check(text, filename):
        check_error(problem, "dg check")
    interp = dsl.Interpreter(stdout=io.StringIO(), seed=0, **settings)
    try:
        value = interp.run(text, filename)
    except DgError as err:
        check_error(err, "dg run")
        return err.kind
    check_value(value, "dg run")
    show(value)               # what the REPL would echo
    return "ok"


_saved = {}     # (test, kind of failure) -> corpus file; shrinking replaces it with smaller inputs


def save_failure(text, prefix, failure):
    """Write a failing input into the corpus (long local runs only) and return its path."""
    CORPUS.mkdir(exist_ok=True)
    key = (prefix, type(failure).__name__)
    if key in _saved:
        _saved[key].unlink(missing_ok=True)
    path = _saved[key] = CORPUS / f"{prefix}-{zlib.crc32(text.encode('utf-8', 'replace')):08x}.dg"
    path.write_text(text, encoding="utf-8", errors="replace", newline="")
    return path


def judged(text, prefix, **kwargs):
    """`outcome(text)`, saving the input to the corpus first if it fails during a long run."""
    try:
        return outcome(text, **kwargs)
    except (AssertionError, Exception, Hang) as failure:
        if long_run():
            save_failure(text, prefix, failure)
        raise
