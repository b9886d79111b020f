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

# The tests live in folders by subject; the helpers (gradcheck, the fuzz harness) beside this file,
# and a few test modules share helpers with others (`from test_jit_loops import ops_of`): every
# folder is importable from every test.
for _folder in [Path(__file__).resolve().parent, *sorted(p for p in Path(__file__).resolve().parent.iterdir()
                                                        if p.is_dir() and p.name != "fuzz_corpus")]:
    if str(_folder) not in sys.path:
        sys.path.insert(0, str(_folder))


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


@pytest.fixture(autouse=True, scope="session")
def _log_every_history():
    """With DG_LOG_EVERY_HISTORY=1, every tensor a Scan carries keeps its history as a log
    (dsl/core/row_log.py), which by default only tensors of MIN_ENTRIES or more do: the fuzzers'
    small programs then run that path (docs/reliability.md)."""
    if os.environ.get("DG_LOG_EVERY_HISTORY") != "1":
        yield
        return
    from dsl.core import row_log
    before, row_log.MIN_ENTRIES = row_log.MIN_ENTRIES, 1
    yield
    row_log.MIN_ENTRIES = before


@pytest.fixture(params=["numpy", "xla"])
def backend(request):
    """Each jit backend by name, for a test taking `backend`; "xla" is skipped where JAX (the xla
    extra) is not installed."""
    if request.param == "xla":
        pytest.importorskip("jax")
    return request.param


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
    """The items of the iterations a compiled loop stopped at and ran alone (dsl/transform/jit/loop_body.py,
    Driver._step), for the loop tests of test_jit_loops.py and test_jit_while.py."""
    from dsl.transform.jit import loop_body
    items = []
    real = loop_body.Driver._step

    def spied(self, *args):
        items.append(args[1])
        return real(self, *args)
    monkeypatch.setattr(loop_body.Driver, "_step", spied)
    return items


# ---------------------------------------------------------------- the quick run
# `pytest -m "not slow"` leaves out what starts processes (the `dg` command, a kernel, a language
# server, pip), builds wheels, fuzzes, or runs long by design (memory over thousands of steps,
# deep recursions, matrices of every composition); the README gives both commands' times.
SLOW_MODULES = {"test_fuzz", "test_jit_fuzz", "test_grad_fuzz", "test_vmap_fuzz", "test_fast_parser",
                "test_install", "test_interrupts", "test_lsp", "test_kernel", "test_ipython", "test_bench_smoke",
                "test_gradbench", "test_closure_captures", "test_transform_agreement", "test_fusion",
                "test_ml_examples", "test_plot", "test_xla_fuzz", "test_xla_shard"}
SLOW_TESTS = ("test_deeply_nested_values_stop_with_a_limit_error", "test_raised_max_depth",
              "test_a_timeout_stops", "test_deeply_nested_source_is_a_limit_error",
              "test_a_100000_deep_recursion", "test_every_example_prints_the_same", "test_memory_",
              "test_ctrl_c_", "test_a_while_loop_under_forward_mode", "test_a_loop_ended_by_a_break_under_reverse_mode",
              "test_host_values_that_contain_themselves", "test_load_csv_takes_memory", "test_repeated_gradient_calls",
              "test_random_", "test_every_registered_primitive_is_exercised", "test_a_long_training_run",
              "test_a_loop_jit_compiles_whole", "test_a_loop_jit_writes_out", "test_reading_a_long_csv",
              "test_load_csv_with_a_hundred_thousand_columns", "test_a_jitted_adam_step",
              "test_standard_output_on_a_full_device", "test_closed_standard_", "test_dg_run_does_not_import",
              "test_pygmentize_", "test_python_dash_m_dsl", "test_pipe_closed_early", "test_arguments_that_are_not_utf8",
              "test_a_deferred_numerics_check", "test_every_plain_step_is_exercised",
              "test_third_and_fourth_derivatives_through_a_loop", "test_vmap_of_a_rolled_third_derivative",
              # XLA compiles each recording (about 0.1-1 s)
              "test_value_and_gradient_of_every_rule_case_agree", "test_a_loop_is_one_scan_on_xla",
              "test_without_jax_asking_for_xla", "test_dg_run_takes_a_backend",
              "test_a_new_process_reads_the_program_back",
              # these start a Python process
              "test_deep_nesting_under_a_small_recursion_limit", "test_a_top_level_let_may_shadow_the_builtin",
              "test_a_save_removes_the_temporary_files_of_killed_saves", "test_console_script_is_installed",
              "test_no_traceback_for_any_program_error", "test_importing_dsl_loads_no_ui",
              "test_dg_files_pick_this_lexer")


def pytest_collection_modifyitems(config, items):
    """Mark the slow tests (see above)."""
    for item in items:
        module = item.module.__name__ if item.module is not None else ""
        if (module in SLOW_MODULES or "dg" in getattr(item, "fixturenames", ())
                or item.name.startswith(SLOW_TESTS)):
            item.add_marker(pytest.mark.slow)
