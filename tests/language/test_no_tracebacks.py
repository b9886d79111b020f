"""Inputs that once reached a Python traceback (issue 15, item 3): each is now a dg error of the
right kind, with a location where the program has one, or a one-line message from `dg`."""

import io
import json
import subprocess
import sys
import tracemalloc
import zlib

import numpy as np
import pytest

import dsl
from dsl.runtime.builtins import files
from dsl.errors import DgError


def dg_error(src, **options):
    """The DgError `src` stops with (checked to point into it)."""
    with pytest.raises(DgError) as info:
        dsl.Interpreter(stdout=io.StringIO(), **options).run(src, "p.dg")
    err = info.value
    assert err.filename == "p.dg" and err.line is not None, str(err)
    return err


@pytest.mark.parametrize("src", ['f"{-1:c}"', 'f"{2**40:c}"', 'f"{10**400:e}"', 'f"{[1.0]:c}"'])
def test_fstring_formats_that_overflow(src):
    err = dg_error(f"print({src})")
    assert err.kind == "value" and "format spec" in err.message


@pytest.mark.parametrize("src, kind", [
    ("zeros(10 ** 5000)", "limit"), ("ones(3)[10 ** 5000]", "limit"), ("sum(ones(3), axis=10 ** 5000)", "limit"),
    ("grad(fn(x) => x, argnums=10 ** 5000)(1.0)", "limit"), ("zeros(10 ** 4000)", "limit"),
    ("ones(3)[10 ** 4000]", "index"), ("sum(ones(3), axis=10 ** 4000)", "index"),
    ("grad(fn(x) => x, argnums=10 ** 4000)(1.0)", "type")])
def test_ints_of_thousands_of_digits_in_messages(src, kind):
    err = dg_error(src)
    assert err.kind == kind
    assert len(err.message) < 300          # the int is named by its size, not its 4,000 digits


def test_jacobian_with_respect_to_a_tuple_holding_a_float_and_a_tensor():
    out = io.StringIO()
    dsl.Interpreter(stdout=out).run("print(jacobian(fn(x) => x[0])((1.0, [1.0, 2.0])))\n"
                                    "print(jacobian(fn(p) => p[1] * p[0])((3.0, [1.0, 2.0])))")
    assert out.getvalue() == "(1.0, [0.0, 0.0])\n([1.0, 2.0], [[3.0, 0.0], [0.0, 3.0]])\n"


@pytest.mark.parametrize("answer, kind", [("(10 ** 400,)", "numerics"), ("10 ** 400", "numerics"),
                                          ('("a",)', "grad"), ("(1.0, 2.0)", "grad")])
def test_custom_vjp_backward_returning_a_huge_int_or_a_string(answer, kind):
    err = dg_error(f"let f = custom_vjp(fn(x) => x * 2.0, fn(x, out, g) => {answer})\ngrad(f)(1.0)")
    assert err.kind == kind


def with_header(tree, data=b""):
    """Checkpoint bytes with this JSON tree, a correct checksum."""
    header = json.dumps({"format": "dg-checkpoint", "tree": tree}).encode()
    crc = zlib.crc32(data, zlib.crc32(header))
    return files._PREFIX.pack(files.MAGIC, 1, len(header), len(data), crc) + header + data


def test_a_crafted_checkpoint_with_33_axes_is_refused_at_load(tmp_path):
    path = tmp_path / "axes.ckpt"
    path.write_bytes(with_header({"t": "tensor", "dtype": "float64", "shape": [1] * 33, "offset": 0,
                                  "nbytes": 8}, b"\0" * 8))
    err = dg_error(f'load("{path}")')
    assert err.kind == "limit" and "at most 32 axes" in err.message


def test_set_refuses_arrays_over_the_interpreters_limits():
    interp = dsl.Interpreter(max_tensor_elements=100)
    for value, words in ((np.zeros((1,) * 40), "at most 32 axes"), (np.zeros(1000), "more than the limit"),
                         (np.broadcast_to(np.zeros(1), (10 ** 6, 10 ** 6)), "more than the limit")):
        with pytest.raises(DgError) as info:
            interp.set("x", value)
        assert info.value.kind == "limit" and words in info.value.message
    interp.set("x", np.zeros(100))
    assert interp.eval("shape(x)") == (100,)


def test_cross_entropy_names_a_huge_class_index_as_given():
    err = dg_error("cross_entropy(ones((2, 3)), [0.0, 1e300])")
    assert err.kind == "index" and "class index 1e+300 is out of range" in err.message


def test_an_unclosed_call_after_an_fstring_is_reported_where_it_is():
    err = dg_error('let x = 1\nprint(f"{x}"\n')
    assert err.kind == "syntax" and err.line == 2
    assert "the '(' at line 2, column 6 is never closed" in err.hint


def test_a_12_mb_string_literal_costs_a_few_bytes_per_character():
    n = 12_000_000
    src = 'let s = "' + "a" * n + '"\nlet k = len(s)'
    interp = dsl.Interpreter()
    tracemalloc.start()
    try:
        interp.run(src)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert interp.eval("k") == n
    assert peak < 8 * n, f"{peak / n:.0f} bytes per character"     # 420 before


def test_an_error_on_a_very_long_line_shows_a_window_of_it():
    err = dg_error('let s = "' + "a" * 100_000 + '" + 1')
    text = str(err)
    assert len(text) < 1000 and "..." in text and "^" in text


# ---------------------------------------------------------------- standard streams and encodings
def run_dg(args, **kw):
    """`dg ARGS...` in a subprocess, with bytes for arguments allowed."""
    return subprocess.run([sys.executable, "-m", "dsl", *args], capture_output=True, timeout=120, **kw)


def test_closed_standard_output_is_one_line_and_exit_1():
    proc = subprocess.run(f"{sys.executable} -m dsl -c 'print(1)' >&-", shell=True, capture_output=True,
                          timeout=120)
    assert proc.returncode == 1
    assert proc.stderr.decode() == "dg: cannot write to the output: it is closed\n"
    quiet = subprocess.run(f"{sys.executable} -m dsl -c 'let x = 1' >&-", shell=True, capture_output=True,
                           timeout=120)
    assert quiet.returncode == 0 and quiet.stderr == b""


def test_closed_standard_input_is_one_line_and_exit_1():
    for args in ("run -", ""):
        proc = subprocess.run(f"{sys.executable} -m dsl {args} <&-", shell=True, capture_output=True, timeout=120)
        assert proc.returncode == 1, proc.stderr
        assert proc.stderr.decode().startswith("dg: cannot read") and proc.stderr.count(b"\n") == 1


def test_standard_output_on_a_full_device_is_one_line_and_exit_1(tmp_path):
    script = tmp_path / "p.dg"
    script.write_text("print(1)\n")
    for args in (["-c", "print(1)"], ["run", str(script)]):
        with open("/dev/full", "w") as full:
            proc = subprocess.run([sys.executable, "-m", "dsl", *args], stdout=full, stderr=subprocess.PIPE,
                                  timeout=120)
        assert proc.returncode == 1
        assert proc.stderr.decode() == "dg: cannot write to the output: No space left on device\n"


def test_arguments_that_are_not_utf8_print_and_save(tmp_path):
    path = tmp_path / "s.ckpt"
    proc = run_dg(["-c", f'print(argv[0], f"<{{argv[0]}}>")\nsave("{path}", {{argv[0]: argv[0]}})\n'
                         f'let m = load("{path}")\nprint(keys(m)[0] == argv[0], m[argv[0]] == argv[0])',
                   b"a\xffb"])
    assert proc.returncode == 0, proc.stderr.decode()
    first, second = proc.stdout.decode("utf-8", "replace").splitlines()
    assert first.startswith("a") and first.endswith("b>") and second == "true true"


def test_a_stream_that_cannot_encode_the_text_gets_replacement_characters(tmp_path):
    path = tmp_path / "out.txt"
    with open(path, "w", encoding="ascii") as out:
        interp = dsl.Interpreter(stdout=out)
        interp.bind("s", "caf\u00e9 \udcff")
        interp.run("print(s)")
    assert path.read_text() == "caf? ?\n"
