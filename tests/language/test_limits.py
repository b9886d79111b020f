"""Limits: runaway programs stop with a `limit` error that has a clear message and a location,
never with a Python RecursionError, a segmentation fault, a hang or an exhausted machine.

Each limit is configurable in dsl.Interpreter(...) and on the command line (docs/reliability.md).
"""

import gc
import io
import json
import struct
import subprocess
import sys
import zlib

import numpy as np
import pytest

import dsl
from dsl.runtime.builtins import files
from dsl.errors import DgError

DEEP = "fn f(n) { if n == 0 { return 0 } return 1 + f(n - 1) }\nprint(f(100000))\n"


def failure(src, **options):
    """The DgError `src` stops with."""
    with pytest.raises(DgError) as info:
        dsl.Interpreter(stdout=io.StringIO(), **options).run(src, "limits.dg")
    return info.value


def limit_error(src, **options):
    """The `limit` error `src` stops with, checked to have a message and a location in `src`."""
    err = failure(src, **options)
    assert err.kind == "limit", str(err)
    assert err.span is not None and err.filename == "limits.dg", str(err)
    assert 1 <= err.line <= src.count("\n") + 1
    return err


# ---------------------------------------------------------------- call depth
def test_a_100000_deep_recursion_stops_with_a_limit_error_at_the_recursive_call():
    err = limit_error(DEEP)
    assert "more than 10,000" in err.message and "nested calls" in err.message
    assert (err.line, err.column) == (1, 45)                 # the call f(n - 1)
    assert "--max-depth" in err.hint and "max_depth" in err.hint
    assert "and 9,998 more times in a row" in str(err) or "and 9998 more times in a row" in str(err)


def test_max_depth_is_configurable_in_the_interpreter():
    src = "fn f(n) { if n == 0 { return 0 } return 1 + f(n - 1) }\nprint(f(N))\n"
    out = io.StringIO()
    dsl.Interpreter(stdout=out, max_depth=60).run(src.replace("N", "50"))
    assert out.getvalue() == "50\n"
    assert "more than 60" in limit_error(src.replace("N", "70"), max_depth=60).message


def test_a_100000_deep_recursion_in_dg_run_is_a_clean_error(dg, tmp_path):
    script = tmp_path / "deep.dg"
    script.write_text(DEEP)
    proc = dg("run", str(script))
    assert proc.returncode == 1, proc.stderr[-2000:]
    assert proc.stderr.startswith("error[limit]: too many nested calls (more than 10,000)")
    assert "Traceback" not in proc.stderr and "RecursionError" not in proc.stderr


# Recursion that passes through C code (a builtin calling a dg function, grad inside grad) uses
# the C stack; with a raised --max-depth it crashed the process (SIGSEGV) before the limit.
THROUGH_C = {
    "tree_map": "fn f(n) { if n == 0 { return 0.0 } return tree_map(fn(x) => f(n - 1), 1.0) }\n"
                "print(f(N))\n",
    "grad": "fn f(x, n) { if n == 0 { return x } return grad(fn(y) => f(y, n - 1) * y)(x) }\n"
            "print(f(1.0, N))\n",
}


@pytest.mark.parametrize("kind", sorted(THROUGH_C))
def test_raised_max_depth_with_recursion_through_builtins_never_crashes(dg, tmp_path, kind):
    script = tmp_path / "deep.dg"
    script.write_text(THROUGH_C[kind].replace("N", "100000"))
    proc = dg("run", "--max-depth", "30000", str(script), timeout=300)
    assert proc.returncode == 1, (proc.returncode, proc.stderr[-2000:])     # -11 was the crash
    if kind == "grad" and sys.version_info >= (3, 12):
        # grad's result is called through its __call__, which from Python 3.12 counts against
        # Python's fixed C recursion limit: that stops the recursion first (reference.md)
        assert proc.stderr.startswith("error[limit]: the program nests too deeply")
    else:
        assert proc.stderr.startswith("error[limit]: too many nested calls (more than 30,000)")


def test_raised_max_depth_lets_a_deep_recursion_through_builtins_finish(dg, tmp_path):
    script = tmp_path / "deep.dg"
    script.write_text(THROUGH_C["tree_map"].replace("N", "9000"))     # two dg calls a level
    proc = dg("run", "--max-depth", "20000", str(script), timeout=300)
    assert (proc.returncode, proc.stdout) == (0, "0.0\n"), proc.stderr[-2000:]


def test_raised_max_depth_in_the_interpreter_runs_on_a_big_enough_stack():
    out = io.StringIO()
    interp = dsl.Interpreter(stdout=out, max_depth=20000)
    interp.run(THROUGH_C["tree_map"].replace("N", "9000"))
    assert out.getvalue() == "0.0\n"
    assert interp.eval("1 + 1") == 2              # the interpreter stays usable after a deep run


def test_deeply_nested_values_stop_with_a_limit_error_not_a_recursion_error():
    # the collector's full passes over a million nested tuples, beside everything the suite's
    # earlier tests left alive, tripled this test's time in a whole run: it rests meanwhile
    gc.disable()
    try:
        interp = dsl.Interpreter(stdout=io.StringIO())
        interp.run("let t = 1.0\nfor i in range(1000000) { t = (t,) }\n", "limits.dg")     # deeper than any stack
        for use in ("print(t)", "t == t", "str(t)", "tree_map(fn(x) => x, t)", "tensor(t)"):
            with pytest.raises(DgError) as info:
                interp.run("\n\n" + use, "limits.dg")         # on line 3, after the two that made t
            err = info.value
            assert err.kind in ("limit", "shape"), (use, str(err))
            assert err.span is not None and err.line == 3, use
    finally:
        gc.enable()


# ---------------------------------------------------------------- tensor size
def test_a_huge_zeros_is_refused_before_numpy_tries_to_allocate_it():
    err = limit_error("zeros((100000, 100000, 100))")
    # the message is dg's own count, not numpy's MemoryError ("out of memory")
    assert "(100000, 100000, 100) has 1,000,000,000,000 elements" in err.message
    assert "--max-tensor" in err.hint and "max_tensor_elements" in err.hint


ALLOCATING = {
    "zeros": "zeros((200, 200))",
    "ones": "ones((200, 200))",
    "full": "full((200, 200), 1.0)",
    "rand": "rand((200, 200))",
    "randn": "randn((200, 200))",
    "eye": "eye(200)",
    "arange": "arange(40000.0)",
    "linspace": "linspace(0, 1, 40000)",
    "broadcast add": "zeros((200, 1)) + zeros((1, 200))",
    "broadcast multiply": "zeros((200, 1)) * zeros((1, 200))",
    "broadcast compare": "zeros((200, 1)) < zeros((1, 200))",
    "broadcast maximum": "maximum(zeros((200, 1)), zeros((1, 200)))",
    "where": "where(zeros((200, 1)) > 0, zeros((1, 200)), 1.0)",
    "ssm_scan": "ssm_scan(zeros((200, 1)), zeros((1, 200)), 1.0)",
    "matmul": "zeros((200, 1)) @ zeros((1, 200))",
    "cat": "let a = zeros((5000,))\ncat((a, a, a, a, a, a, a, a, a))",
    "stack": "let a = zeros((5000,))\nstack((a, a, a, a, a, a, a, a, a))",
    "bracket literal": "let a = zeros((5000,))\n[a, a, a, a, a, a, a, a, a]",
    "one_hot": "one_hot(zeros((200,)), 200)",
    "clamp": "clamp(zeros((200, 1)), zeros((1, 200)), 1.0)",
    # (layer_norm and batch_norm allocate no more than x: a gamma or beta that would enlarge the
    # result is a shape error, tests/autodiff/test_builtins_forward.py)
    "index gather": "zeros((1, 200))[zeros((200,))]",
    "gather": "gather(zeros((1, 200)), zeros((200,)))",
    "jacobian": "jacobian(fn(x) => x * 2.0)(zeros((200,)))",
    "hessian": "hessian(fn(x) => sum(x * x))(zeros((200,)))",
}


@pytest.mark.parametrize("what", sorted(ALLOCATING))
def test_every_allocating_path_respects_the_tensor_size_limit(what):
    src = ALLOCATING[what]
    err = limit_error(src, max_tensor_elements=30_000)
    assert "more than the limit of 30,000" in err.message, err.message
    assert "elements" in err.message
    # the same line runs under a limit it fits in
    dsl.Interpreter(stdout=io.StringIO(), max_tensor_elements=50_000).run(src)


def test_max_tensor_on_the_command_line(dg):
    proc = dg("--max-tensor", "100", "-c", "print(size(zeros((10, 10))))\nzeros((10, 11))")
    assert proc.returncode == 1 and proc.stdout == "100\n"
    assert proc.stderr.startswith("error[limit]: a tensor of shape (10, 11) has 110 elements")


@pytest.mark.parametrize("src", ['"ab" * 100000000', "(1, 2) * 100000000",
                                 'let s = "ab"\nfor i in range(40) { s = s + s }',
                                 "let t = (1,)\nfor i in range(40) { t = t + t }",
                                 'let s = "ab"\nfor i in range(40) { s = f"{s}{s}" }'])
def test_strings_and_tuples_cannot_grow_without_bound(src):
    err = limit_error(src)
    assert "10,000,000" in err.message


def test_builtins_cannot_turn_a_huge_range_into_a_list():
    for src in ("enumerate(range(10 ** 9))", "zip(range(10 ** 9), range(3))"):
        assert "more than 10,000,000 items" in limit_error(src).message


def test_a_for_loop_over_a_big_tensor_walks_it_lazily():
    # a list of 4,000,000 Python floats would take four times the tensor's memory up front
    out = io.StringIO()
    dsl.Interpreter(stdout=out, max_steps=5_000).run(
        "let n = 0\nfor x in zeros((4000000,)) { n += 1\n if n == 3 { break } }\nprint(n)")
    assert out.getvalue() == "3\n"


def test_a_huge_f_string_width_is_refused():
    assert "10,000" in limit_error('let x = 1.0\nprint(f"{x:>2000000000}")').message
    assert "10,000" in limit_error('let x = 1.0\nprint(f"{x:.900000000f}")').message


def _checkpoint(tree_node, data=b""):
    """A checkpoint file's bytes with a hand-made JSON tree."""
    header = json.dumps({"format": "dg-checkpoint", "tree": tree_node}).encode()
    crc = zlib.crc32(data, zlib.crc32(header))
    return struct.pack("<8sIQQI", files.MAGIC, files.VERSION, len(header), len(data), crc) + header + data


def test_load_of_a_tensor_over_the_limit_is_a_limit_error(tmp_path):
    data = np.zeros(100).tobytes()
    path = tmp_path / "big.ckpt"
    path.write_bytes(_checkpoint({"t": "tensor", "dtype": "float64", "shape": [100], "offset": 0,
                                  "nbytes": len(data)}, data))
    err = limit_error(f'load("{path}")', max_tensor_elements=50)
    assert "(100,)" in err.message


def test_load_of_a_huge_declared_tensor_is_refused_without_allocating(tmp_path):
    path = tmp_path / "lie.ckpt"
    shape = [100000, 100000, 100]
    path.write_bytes(_checkpoint({"t": "tensor", "dtype": "float64", "shape": shape, "offset": 0,
                                  "nbytes": 8 * 100000 * 100000 * 100}))
    err = failure(f'load("{path}")')
    assert err.kind == "value" and "lie.ckpt" in err.message


def test_load_csv_respects_the_tensor_size_limit(tmp_path):
    path = tmp_path / "t.csv"
    path.write_text("a,b,c\n" + "1,2,3\n" * 10)
    assert "(10, 3)" in limit_error(f'load_csv("{path}")', max_tensor_elements=20).message


# ---------------------------------------------------------------- steps and time
def test_while_true_stops_at_the_step_budget_pointing_at_the_loop():
    err = limit_error("let n = 0\nwhile true { n += 1 }", max_steps=10_000)
    assert "more than 10,000 steps" in err.message
    assert (err.line, err.column) == (2, 7)
    assert "--max-steps" in err.hint


def test_the_step_budget_counts_calls_too():
    err = limit_error("fn f(n) { return n }\nfor i in range(3) { f(i) }\nlet k = 0\n"
                      "fn g(n) { return g2(n) }\nfn g2(n) { return n }\nlet i = 0\n"
                      "while i < 3000 { i += 1 }\nfor j in range(100000) { g(j) }", max_steps=50_000)
    assert "steps" in err.message


def test_while_true_stops_at_the_timeout():
    import time
    start = time.monotonic()
    err = limit_error("while true {}", timeout=0.3)
    assert time.monotonic() - start < 5
    assert "longer than 0.3 seconds" in err.message and "--timeout" in err.hint


def test_a_recursion_without_loops_stops_at_the_timeout():
    # every call doubles the work; only the call counter can notice the time
    err = limit_error("fn f(n) { if n == 0 { return 0 } return f(n - 1) + f(n - 1) }\nf(60)", timeout=0.3)
    assert "seconds" in err.message


def test_steps_and_timeout_on_the_command_line(dg):
    proc = dg("--max-steps", "5000", "-c", "while true {}")
    assert proc.returncode == 1 and proc.stderr.startswith("error[limit]: the program ran more than 5,000 steps")
    proc = dg("run", "--timeout", "0.5", "-", stdin="print(1)\nwhile true {}\n")
    assert proc.returncode == 1 and proc.stdout == "1\n"
    assert proc.stderr.startswith("error[limit]: the program ran longer than 0.5 seconds")
    assert "<stdin>:2:7" in proc.stderr


def test_nested_loops_share_one_step_count():
    # neither loop alone reaches a thousand iterations per check; together they run a million
    err = limit_error("let n = 0\nfor a in range(1000) { for b in range(1000) { n += 1 } }", max_steps=1000)
    assert "more than 1,000 steps" in err.message
    out = io.StringIO()
    interp = dsl.Interpreter(stdout=out, max_steps=1000)
    with pytest.raises(DgError):
        interp.run("let n = 0\nfor a in range(1000) { for b in range(10) { n += 1 } }")
    assert interp.eval("n") <= 1000          # stopped at the budget, not 1,023 steps later


def _settled():
    """Collect what earlier tests left before a timed run: a full collection they owe (5 million
    objects from the deep-nesting tests, 1.9 s) would otherwise land inside the timed window."""
    import gc
    gc.collect()


def test_a_timeout_stops_three_nested_loops_at_once():
    import time
    _settled()
    start = time.monotonic()
    err = limit_error("let n = 0\nfor a in range(1000) { for b in range(1000) { for c in range(1000) { n += 1 } } }",
                      timeout=1)
    assert "longer than 1 second" in err.message
    assert time.monotonic() - start < 2.5


def test_a_timeout_stops_a_loop_whose_every_iteration_is_slow():
    import time
    _settled()
    start = time.monotonic()
    err = limit_error("let x = ones((600, 600))\nwhile true { let y = x @ x }", timeout=1)
    assert "longer than 1 second" in err.message
    assert time.monotonic() - start < 2.5


def test_the_default_depth_allows_ten_thousand_nested_calls():
    out = io.StringIO()
    interp = dsl.Interpreter(stdout=out)
    interp.run("fn count(n) { if n == 0 { return 0 } return 1 + count(n - 1) }\nprint(count(9990))")
    # through builtins (the C stack): tree_map calling a dg function calling tree_map ...
    interp.run("fn f(n) { if n == 0 { return 0.0 } return tree_map(fn(x) => f(n - 1), 1.0) }\nprint(f(4000))")
    assert out.getvalue() == "9990\n0.0\n"
    assert "more than 10,000" in limit_error("fn c(n) { return 1 + c(n - 1) }\nc(1)").message


@pytest.mark.parametrize("options, message", [
    (dict(timeout=0), "timeout"), (dict(timeout=float("nan")), "timeout"), (dict(timeout=float("inf")), "timeout"),
    (dict(timeout=-1), "timeout"), (dict(max_steps=0), "max_steps"), (dict(max_depth=0), "max_depth"),
    (dict(max_depth=100_000_000), "max_depth"), (dict(max_tensor_elements=0), "max_tensor_elements"),
    (dict(max_steps=1.5), "max_steps"), (dict(timeout="1"), "timeout")])
def test_the_interpreter_refuses_limits_the_command_line_refuses(options, message):
    with pytest.raises((ValueError, TypeError)) as info:
        dsl.Interpreter(**options)
    assert message in str(info.value)


@pytest.mark.parametrize("args", [("--max-depth", "100000000"), ("--timeout", "inf"), ("--timeout", "nan"),
                                  ("--timeout", "0"), ("--max-steps", "-3")])
def test_the_command_line_refuses_impossible_limits(dg, args):
    proc = dg(*args, "-c", "print(1)")
    assert proc.returncode == 2 and proc.stdout == "", proc.stderr
    assert proc.stderr.startswith(f"dg: {args[0]}") and "Traceback" not in proc.stderr


def test_the_command_lines_depth_ceiling_is_the_interpreters():
    from dsl import cli
    from dsl.base import limits
    assert cli.MAX_DEPTH == limits.MAX_DEPTH


def test_two_interpreters_in_two_threads_keep_their_own_limits():
    import threading
    small = dsl.Interpreter(stdout=io.StringIO(), max_tensor_elements=100)
    large = dsl.Interpreter(stdout=io.StringIO())
    problems = []

    def run(interp, expect_limit):
        for _ in range(300):
            try:
                interp.run("let z = zeros((20, 20))\nlet s = sum(z)")
                if expect_limit:
                    problems.append("the small interpreter allocated 400 elements")
            except DgError as exc:
                if not expect_limit or exc.kind != "limit":
                    problems.append(f"{'small' if expect_limit else 'large'}: {exc}")
    threads = [threading.Thread(target=run, args=(small, True)), threading.Thread(target=run, args=(large, False))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert problems == []


def test_one_interpreter_in_two_threads_works_or_says_it_is_busy():
    import threading
    interp = dsl.Interpreter(stdout=io.StringIO())
    interp.run("fn spin(n) { let t = 0\n for i in range(n) { t += 1 }\n return t }")
    spin = interp.lookup("spin")
    results, errors = [], []

    def run():
        for _ in range(20):
            try:
                results.append(spin(20_000))
            except DgError as exc:
                errors.append(exc)
    threads = [threading.Thread(target=run) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert all(r == 20_000 for r in results) and len(results) + len(errors) == 40
    assert all(e.kind == "limit" and "another thread" in e.message for e in errors)
    assert interp.eval("spin(5)") == 5      # and it still works afterwards


def test_limits_are_per_run_not_per_interpreter():
    interp = dsl.Interpreter(stdout=io.StringIO(), max_steps=20_000)
    for _ in range(5):       # each run gets the whole budget again
        interp.run("let n = 0\nwhile n < 15000 { n += 1 }")


# ---------------------------------------------------------------- nesting in the source
NESTED = {
    "parentheses": "(" * 10000 + "1" + ")" * 10000,
    "brackets": "[" * 10000 + "1" + "]" * 10000,
    "unary minus": "let x = 1\n" + "-" * 10000 + "x",
    "unary minus on a number": "-" * 10000 + "1",
    "not": "not " * 10000 + "true",
    "function calls": "abs(" * 10000 + "1" + ")" * 10000,
    "map literals": '{"a": ' * 10000 + "1" + "}" * 10000,
    "blocks": "if true { " * 10000 + "1" + " }" * 10000,
    "lambdas": "fn(x) => " * 10000 + "1",
    "operator chain": " + ".join(["1"] * 100000),
    "power chain": " ** ".join(["1"] * 10000),
    "index chain": "let x = 1\nx" + "[0]" * 10000,
}


@pytest.mark.parametrize("what", sorted(NESTED))
def test_deeply_nested_source_is_a_limit_error_with_a_location(what):
    src = NESTED[what]
    err = limit_error(src)
    assert "nest" in err.message
    problems = dsl.Interpreter().check(src, "limits.dg")       # `dg check` says the same
    assert [p.kind for p in problems] == ["limit"]


def test_deep_nesting_under_a_small_recursion_limit_is_still_a_limit_error():
    # a host that keeps Python's recursion limit low (2,150, what max_depth=5 needs): compiling
    # 1,900 levels of `+` then overflows it
    code = ("import dsl, sys\n"
            "interp = dsl.Interpreter(max_depth=5)\n"
            "sys.setrecursionlimit(2150)\n"
            "try:\n"
            "    interp.run(' + '.join(['1'] * 1900), 'x.dg')\n"
            "except dsl.DgError as e:\n"
            "    print(e.kind, e.line, e.column)\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.stdout == "limit 1 1\n", proc.stderr[-2000:]


def test_a_deep_run_does_not_leave_the_recursion_limit_raised():
    before = sys.getrecursionlimit()
    dsl.Interpreter(stdout=io.StringIO(), max_depth=50_000).run("print(1)")
    assert sys.getrecursionlimit() == before


def test_deeply_nested_source_through_the_cli_is_a_clean_error(dg, tmp_path):
    script = tmp_path / "nested.dg"
    script.write_text("print(" + "(" * 10000 + "1" + ")" * 10000 + ")\n")
    for command in ("run", "check"):
        proc = dg(command, str(script))
        assert proc.returncode == 1, proc.stderr[-1000:]
        assert proc.stderr.startswith("error[limit]: brackets are nested more than 1,000 deep")
        assert "Traceback" not in proc.stderr


def test_ordinary_nesting_is_fine(run):
    assert run("print(" + "(" * 500 + "1" + ")" * 500 + ")") == "1\n"
    assert run("print(" + " + ".join(["1"] * 1500) + ")") == "1500\n"


@pytest.mark.parametrize("option, value", [("--max-depth", "0"), ("--max-steps", "-1"), ("--timeout", "nan"),
                                           ("--timeout", "0"), ("--max-tensor", "-3"), ("--seed", "-1"),
                                           ("--max-depth", "many")])
def test_a_limit_that_makes_no_sense_is_a_usage_error(dg, option, value):
    proc = dg(option, value, "-c", "print(1)")
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.startswith(f"dg: {option} needs a number")
    assert "Traceback" not in proc.stderr


def test_squaring_an_int_in_a_loop_stops_instead_of_hanging():
    # each step doubles the int's size, so the loop's 1,024-step timeout check would come too late
    err = limit_error("let c = 2\nfor i in range(100) { c *= c }", timeout=5)
    assert "more than 4,300 digits" in err.message and err.line == 2


def test_runs_in_several_threads_put_the_hosts_recursion_limit_back():
    import threading
    dsl.Interpreter()       # creating one may raise the limit to what any thread's stack allows
    before = sys.getrecursionlimit()

    def work():
        interp = dsl.Interpreter(stdout=io.StringIO(), max_depth=20_000)
        for _ in range(20):
            interp.run("fn f(n) { if n == 0 { return 0 } return f(n - 1) }\nf(50)")
    threads = [threading.Thread(target=work) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sys.getrecursionlimit() == before


def test_a_tensor_with_many_short_axes_prints_briefly():
    import time
    out = io.StringIO()
    start = time.monotonic()
    dsl.Interpreter(stdout=out).run("print(ones((2,) * 25))\nlet s = str(ones((3,) * 15))")
    assert time.monotonic() - start < 5
    text = out.getvalue()
    assert len(text) < 20_000 and "..." in text and text.count("1.0") <= 1000


@pytest.mark.parametrize("builtin", ["load", "load_csv"])
def test_reading_a_file_that_never_ends_stops_at_the_size_limit(monkeypatch, tmp_path, builtin):
    import os
    import threading
    monkeypatch.setattr(files, "MAX_FILE_BYTES", 1 << 20)
    err = limit_error(f'{builtin}("/dev/zero")')
    assert "longer than 1,048,576 bytes" in err.message
    fifo = tmp_path / "endless"
    os.mkfifo(fifo)

    def write_forever():
        try:
            with open(fifo, "wb") as fh:
                while True:
                    fh.write(b"1,2,3\n" * 10_000)
        except (BrokenPipeError, OSError):
            pass
    writer = threading.Thread(target=write_forever, daemon=True)
    writer.start()
    err = limit_error(f'{builtin}("{fifo}")')
    assert "longer than" in err.message
    writer.join(timeout=10)


# ---------------------------------------------------------------- limits inside compiled code
JIT_LOOP = "let f = jit(fn(x) {\n    for i in range(N) { x = x * 0.5 + 1.0 }\n    return x\n})\n"


def test_a_loop_jit_compiles_whole_stops_at_the_timeout_at_its_line():
    import time
    start = time.monotonic()
    err = limit_error(JIT_LOOP.replace("N", "10 ** 12") + "print(f(1.0))", timeout=0.5)
    assert time.monotonic() - start < 20
    assert "longer than 0.5 seconds" in err.message and (err.line, err.column) == (2, 14)


def test_a_loop_jit_compiles_whole_counts_its_iterations_as_steps():
    err = limit_error(JIT_LOOP.replace("N", "10 ** 12") + "print(f(1.0))", max_steps=100_000)
    assert "more than 100,000 steps" in err.message and err.line == 2
    # the compiled code of later calls counts them too: 12 calls of 1,000 iterations pass 10,000
    ok = JIT_LOOP.replace("N", "1000") + "for k in range(8) { f(1.0) }"
    dsl.Interpreter(max_steps=10_000).run(ok)
    err = limit_error(ok.replace("range(8)", "range(12)"), max_steps=10_000)
    assert "more than 10,000 steps" in err.message and err.line == 2


def test_a_loop_jit_writes_out_stops_at_the_timeout_at_its_line():
    # the print makes jit write the loop out: staging it runs each iteration as the interpreter does
    src = ("let f = jit(fn(x) {\n    for i in range(3000000) {\n        x = x * 0.5 + 1.0\n"
           "        if i % 1000000 == 0 { print(i) }\n    }\n    return x\n})\nprint(f(1.0))")
    err = limit_error(src, timeout=0.5)
    assert "seconds" in err.message and err.line in (2, 3, 4)
    err = limit_error(src, max_steps=50_000)
    assert "steps" in err.message and err.line in (2, 3, 4)
