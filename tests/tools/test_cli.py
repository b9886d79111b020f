"""SPEC section 8: the `dg` command: run, run -, -c, check, argv, exit codes, python -m dsl, seeds."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

from dsl import __version__, cli

DG_SCRIPT = Path(sys.executable).with_name("dg")


def in_process(capsys, *args):
    """Run the CLI in this process; return (exit code, stdout, stderr)."""
    code = cli.main(list(args))
    out = capsys.readouterr()
    return code, out.out, out.err


# ---------------------------------------------------------------- dg run
def test_run_file_with_arguments(dg, tmp_path):
    (tmp_path / "args.dg").write_text('print(argv, type(argv), len(argv))\nfor a in argv { print(a) }\n')
    result = dg("run", "args.dg", "one", "2", "--three", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout == '("one", "2", "--three") tuple 3\none\n2\n--three\n'
    assert result.stderr == ""


def test_run_without_arguments_has_empty_argv(capsys, tmp_path):
    script = tmp_path / "a.dg"
    script.write_text("print(argv)\n")
    assert in_process(capsys, "run", str(script)) == (0, "()\n", "")


def test_run_reads_standard_input(dg):
    result = dg("run", "-", "x", "y", stdin='let a = 2\nprint(a * 21, argv)\n')
    assert result.returncode == 0, result.stderr
    assert result.stdout == '42 ("x", "y")\n'


def test_run_stdin_error_names_stdin(dg):
    result = dg("run", "-", stdin="print(1)\nprint(nope)\n")
    assert result.returncode == 1
    assert result.stdout == "1\n"
    assert " --> <stdin>:2:7" in result.stderr
    assert "Traceback" not in result.stderr


def test_dash_c_runs_a_string(dg):
    result = dg("-c", 'print("hi", argv)', "a", "b")
    assert result.returncode == 0
    assert result.stdout == 'hi ("a", "b")\n'


def test_dash_c_in_process(capsys):
    assert in_process(capsys, "-c", "print(1 + 1)") == (0, "2\n", "")


def test_dash_c_error_exit_1(capsys):
    code, out, err = in_process(capsys, "-c", "print(1)\nlet x = 1 / 0")
    assert code == 1 and out == "1\n"
    assert err.startswith("error[value]: ")
    assert " --> <string>:2:9" in err


def test_console_script_is_installed():
    assert DG_SCRIPT.exists()
    result = subprocess.run([str(DG_SCRIPT), "-c", "print(6 * 7)"], capture_output=True, text=True,
                            timeout=60)
    assert (result.returncode, result.stdout) == (0, "42\n")


def test_python_dash_m_dsl_is_an_alias(tmp_path):
    (tmp_path / "p.dg").write_text("print(sum([1.0, 2.0]))\n")
    result = subprocess.run([sys.executable, "-m", "dsl", "run", "p.dg"], cwd=tmp_path,
                            capture_output=True, text=True, timeout=60)
    assert (result.returncode, result.stdout) == (0, "3.0\n")


def test_output_before_an_error_is_kept_in_order(dg, tmp_path):
    (tmp_path / "o.dg").write_text('for i in range(3) { print(i) }\nerror("stop")\nprint("never")\n')
    result = dg("run", "o.dg", cwd=tmp_path)
    assert result.returncode == 1
    assert result.stdout == "0\n1\n2\n"
    assert result.stderr.startswith("error[user]: stop\n --> o.dg:2:1")


def test_unicode_source_and_output(dg, tmp_path):
    (tmp_path / "u.dg").write_text('let s = "héllo ✓"  # ünïcode comment\nprint(s, len(s))\n', encoding="utf-8")
    result = dg("run", "u.dg", cwd=tmp_path)
    assert result.stdout == "héllo ✓ 7\n"


def test_no_traceback_for_any_program_error(dg, tmp_path):
    programs = ["let x = (1,", "print(y)", 'let a = 1 + "s"', "zeros((2,)) + zeros((3,))",
                'let m = {}\nm["k"]', "(1, 2)[9]", "1 // 0", "fn f() { return f() }\nf()",
                "import nowhere_to_be_found", 'error("u")', "grad(fn(x) => [x, x])(1.0)"]
    for i, src in enumerate(programs):
        path = tmp_path / f"p{i}.dg"
        path.write_text(src + "\n")
    result = subprocess.run(
        [sys.executable, "-c",
         "import sys\nfrom dsl import cli\ncodes = [cli.main(['run', p]) for p in sys.argv[1:]]\n"
         "print(codes)"] + [str(tmp_path / f"p{i}.dg") for i in range(len(programs))],
        capture_output=True, text=True, timeout=60)
    assert result.stdout.strip() == str([1] * len(programs))
    assert "Traceback" not in result.stderr and "internal error" not in result.stderr
    assert result.stderr.count("error[") == len(programs)


# ---------------------------------------------------------------- dg check
TWO_ERRORS = 'print("this must not run")\nlet a = undefined_one + 1\nfn f() { return also_missing }\n'


def test_check_reports_two_errors_in_one_file(dg, tmp_path):
    (tmp_path / "two.dg").write_text(TWO_ERRORS)
    result = dg("check", "two.dg", cwd=tmp_path)
    assert result.returncode == 1
    assert "this must not run" not in result.stdout
    assert result.stderr.count("error[name]") == 2
    assert " --> two.dg:2:9" in result.stderr and " --> two.dg:3:17" in result.stderr
    assert "2 errors found" in result.stderr


def test_check_clean_file(capsys, tmp_path):
    path = tmp_path / "ok.dg"
    path.write_text('fn f(x) { return x * 2 }\nprint(f(2))\n')
    code, out, err = in_process(capsys, "check", str(path))
    assert code == 0 and err == ""
    assert out == "ok: 1 file checked\n"


def test_check_does_not_run_the_program(capsys, tmp_path):
    path = tmp_path / "side.dg"
    path.write_text('print("side effect")\nlet x = 1 / 0\n')
    code, out, err = in_process(capsys, "check", str(path))
    assert code == 0 and "side effect" not in out


def test_check_several_files(capsys, tmp_path):
    good, bad = tmp_path / "good.dg", tmp_path / "bad.dg"
    good.write_text("let a = 1\n")
    bad.write_text("let b = nope\n")
    code, out, err = in_process(capsys, "check", str(good), str(bad))
    assert code == 1
    assert err.count("error[name]") == 1 and "1 error found" in err


def test_check_syntax_error(capsys, tmp_path):
    path = tmp_path / "s.dg"
    path.write_text("let a = 1 +\n")
    code, out, err = in_process(capsys, "check", str(path))
    assert code == 1 and err.startswith("error[syntax]: expected an expression after '+'")


def test_check_reports_assignment_errors_and_misplaced_break(capsys, tmp_path):
    path = tmp_path / "a.dg"
    path.write_text("q = 1\nlet t = 0\nfn f() { t = 2 }\nfn g() { break }\n")
    code, out, err = in_process(capsys, "check", str(path))
    assert code == 1
    assert err.count("error[") == 3
    assert "a.dg:1:1" in err and "a.dg:3:10" in err and "a.dg:4:10" in err


def test_check_knows_builtins_and_argv(capsys, tmp_path):
    path = tmp_path / "b.dg"
    path.write_text("print(len(argv), sum(zeros(3)), grad(fn(x) => x)(1.0))\n")
    assert in_process(capsys, "check", str(path))[0] == 0


def test_check_top_level_functions_in_any_order(capsys, tmp_path):
    path = tmp_path / "o.dg"
    path.write_text("print(later())\nfn later() { return 1 }\n")
    assert in_process(capsys, "check", str(path))[0] == 0


def test_check_missing_file_is_usage_error(capsys, tmp_path):
    code, out, err = in_process(capsys, "check", str(tmp_path / "missing.dg"))
    assert code == 2 and "cannot read" in err


# ---------------------------------------------------------------- exit codes and usage
@pytest.mark.parametrize("args", [["bogus"], ["--bogus"], ["run"], ["-c"], ["check"],
                                  ["--max-depth", "x", "-c", "1"], ["--max-depth"]])
def test_usage_errors_exit_2(capsys, args):
    code, out, err = in_process(capsys, *args)
    assert code == 2
    assert err.startswith("dg: ") and "usage:" in err


def test_missing_script_is_usage_error(capsys, tmp_path):
    code, out, err = in_process(capsys, "run", str(tmp_path / "nope.dg"))
    assert code == 2 and "cannot read" in err and "Traceback" not in err


def test_exit_codes_via_subprocess(dg, tmp_path):
    (tmp_path / "ok.dg").write_text("print(1)\n")
    (tmp_path / "bad.dg").write_text("print(nope)\n")
    assert dg("run", "ok.dg", cwd=tmp_path).returncode == 0
    assert dg("run", "bad.dg", cwd=tmp_path).returncode == 1
    assert dg("run", "missing.dg", cwd=tmp_path).returncode == 2
    assert dg("frobnicate", cwd=tmp_path).returncode == 2


def test_version(capsys):
    code, out, err = in_process(capsys, "--version")
    assert code == 0 and out == f"dg {__version__}\n"


def test_help(capsys):
    code, out, err = in_process(capsys, "--help")
    assert code == 0 and "dg run" in out and "dg check" in out


# ---------------------------------------------------------------- options
def test_options_before_run_and_after(capsys, tmp_path):
    path = tmp_path / "deep.dg"
    path.write_text("fn d(n) { if n == 0 { return 0 } return 1 + d(n - 1) }\nprint(d(80))\n")
    assert in_process(capsys, "run", str(path))[0] == 0
    code, out, err = in_process(capsys, "--max-depth", "50", "run", str(path))
    assert code == 1 and err.startswith("error[limit]")
    code, out, err = in_process(capsys, "run", "--max-depth=50", str(path))
    assert code == 1 and err.startswith("error[limit]")


def test_script_arguments_after_the_file_are_not_options(capsys, tmp_path):
    path = tmp_path / "a.dg"
    path.write_text("print(argv)\n")
    assert in_process(capsys, "run", str(path), "--max-depth", "5") == (0, '("--max-depth", "5")\n', "")


def test_max_steps_option(capsys):
    code, out, err = in_process(capsys, "--max-steps", "5000", "-c", "let i = 0\nwhile true { i += 1 }")
    assert code == 1 and err.startswith("error[limit]")


def test_no_check_numerics_option(capsys):
    src = "print(grad(fn(x) => sqrt(x))(0.0))"
    code, out, err = in_process(capsys, "-c", src)
    assert code == 1 and err.startswith("error[numerics]")
    code, out, err = in_process(capsys, "--no-check-numerics", "-c", src)
    assert code == 0 and out == "inf\n"


def test_seed_option(capsys):
    a = in_process(capsys, "--seed", "3", "-c", "print(randn((3,)))")
    b = in_process(capsys, "--seed", "3", "-c", "print(randn((3,)))")
    c = in_process(capsys, "-c", "seed(3)\nprint(randn((3,)))")
    assert a[0] == 0 and a == b == c


def test_seeded_program_prints_the_same_numbers_in_two_processes(dg, tmp_path):
    (tmp_path / "r.dg").write_text("seed(123)\nprint(randn((4,)), rand((2, 2)))\nprint(randn(()))\n")
    first = dg("run", "r.dg", cwd=tmp_path)
    second = dg("run", "r.dg", cwd=tmp_path)
    assert first.returncode == 0 and first.stdout == second.stdout
    assert first.stdout.count("[") >= 3


def test_seeded_numbers_are_machine_independent_pcg64(run):
    # the generator is numpy's PCG64, whose stream is fixed by the algorithm
    import numpy as np
    expected = np.random.Generator(np.random.PCG64(2024)).standard_normal(3)
    assert run("seed(2024)\nprint(randn((3,)))") == "[" + ", ".join(repr(float(v)) for v in expected) + "]\n"


def test_unseeded_runs_differ(capsys):
    a = in_process(capsys, "-c", "print(rand((4,)))")
    b = in_process(capsys, "-c", "print(rand((4,)))")
    assert a[1] != b[1]


def test_cli_from_another_working_directory(dg, tmp_path):
    sub = tmp_path / "elsewhere"
    sub.mkdir()
    result = dg("-c", "import nn\nimport optim\nprint(type(nn.mlp))", cwd=sub)
    assert (result.returncode, result.stdout) == (0, "function\n"), result.stderr


def test_pipe_closed_early_is_not_an_error(tmp_path):
    (tmp_path / "many.dg").write_text("for i in range(100000) { print(i) }\n")
    env = dict(os.environ)
    proc = subprocess.run(f"'{sys.executable}' -m dsl run many.dg | head -n 2", shell=True, cwd=tmp_path,
                          capture_output=True, text=True, timeout=60, env=env)
    assert proc.stdout == "0\n1\n"
    assert "Traceback" not in proc.stderr


@pytest.mark.parametrize("args", [["--help"], ["-h"], ["run", "--help"], ["run", "-h"], ["--seed", "1", "--help"]])
def test_help_prints_usage_and_succeeds(capsys, args):
    assert cli.main(args) == 0
    out = capsys.readouterr().out
    assert "usage: dg run" in out and "--max-depth" in out


def test_help_after_the_script_goes_to_the_script(capsys, tmp_path):
    script = tmp_path / "a.dg"
    script.write_text("print(argv)\n")
    assert cli.main(["run", str(script), "--help"]) == 0
    assert capsys.readouterr().out == '("--help",)\n'


def test_explain_jit_and_jit_flags(capsys, tmp_path):
    # issue 12 item 4: `dg run --explain-jit` says on standard error when jit stages a function;
    # with --jit, the functions grad makes are jitted too (and so explained)
    script = tmp_path / "j.dg"
    script.write_text("fn f(x) { return sin(x) * x }\nlet fast = jit(f)\nprint(fast(0.5))\n"
                      "let g = grad(fn(x) => x * x * 3.0)\nprint(g(2.0))\n")
    out = "0.2397127693021015\n12.0\n"
    assert in_process(capsys, "run", str(script)) == (0, out, "")
    assert in_process(capsys, "run", "--explain-jit", str(script)) == (0, out, "jit(f): staging it: a new signature\n")
    code, stdout, err = in_process(capsys, "run", "--jit", "--explain-jit", str(script))
    assert (code, stdout) == (0, out)
    assert err.splitlines() == ["jit(f): staging it: a new signature",
                                "jit(grad(<lambda>)): staging it: a new signature"]
