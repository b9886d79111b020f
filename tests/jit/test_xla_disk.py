"""Compiled programs kept on disk by dg's own key (dsl/backends/xla/disk.py): a new process reads
a program back without tracing it; a different program, or different input types, is another
key; a program calling back into its process has none; a damaged file is a miss."""

import os
import subprocess
import sys

import numpy as np
import pytest

import dsl
from dsl.backends.xla import disk

jax = pytest.importorskip("jax")

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SOURCE = "fn f(x, w) {\n  let s = x\n  for k in range(20) { s = s + 0.1 * sin(s) * w }\n  return s\n}\n"


def _program(src, *args, backend="xla"):
    """The recording jit made of g for these arguments, and the result."""
    i = dsl.Interpreter()
    i.run(src + f'\nlet g = jit(grad(f), backend="{backend}")')
    g = i.lookup("g")
    g(*args)        # stages
    out = g(*args)  # compiles (or reads the program back), then runs
    (entries,) = g.call.entries.values()
    return entries[0].program, out


def _key(program, values):
    return disk.key(program, values, jax)


def test_the_key_is_the_program_and_the_input_types():
    a, _ = _program(SOURCE, 0.5, 1.5)
    b, _ = _program(SOURCE, 0.5, 1.5)
    c, _ = _program(SOURCE.replace("0.1", "0.2"), 0.5, 1.5)
    d, _ = _program(SOURCE.replace("range(20)", "range(21)"), 0.5, 1.5)
    assert _key(a, [0.5, 1.5]) == _key(b, [0.7, 2.5])       # the same program, other values
    assert len({_key(a, [0.5, 1.5]), _key(c, [0.5, 1.5]), _key(d, [0.5, 1.5])}) == 3
    assert _key(a, [0.5, 1.5]) != _key(a, [np.zeros(3), 1.5])
    assert _key(a, [np.zeros(3), 1.5]) != _key(a, [np.zeros(4), 1.5])


def test_a_program_with_an_effect_is_not_kept():
    program, _ = _program(SOURCE.replace("return s", "print(s)\n  return s"), 0.5, 1.5)
    assert _key(program, [0.5, 1.5]) is None


CHILD = """
import sys
import dsl
import dsl.backends.xla.code as code
if sys.argv[1] == "warm":
    def traced(*a, **k):
        raise AssertionError("traced although the program was on disk")
    code.lower_steps = traced
if sys.argv[1] == "busy":     # JAX compiles with its cache (in dg's folder) before dg does
    from dsl.backends.xla import runtime
    runtime.load().jax.jit(lambda x: x + 1.0)(1.0)
i = dsl.Interpreter()
i.run('''SRC''' + '\\nlet g = jit(grad(f), backend="xla")')
g = i.lookup("g")
g(0.5, 1.5)
print(repr(g(0.5, 1.5)))
"""


def _child(mode, folder):
    env = dict(os.environ, DG_XLA_CACHE=folder, PYTHONPATH=ROOT)
    done = subprocess.run([sys.executable, "-c", CHILD.replace("SRC", SOURCE), mode], env=env, cwd=ROOT,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    return float(done.stdout.split()[-1])


def test_a_new_process_reads_the_program_back_without_tracing_it(tmp_path):
    folder = str(tmp_path)
    first = _child("cold", folder)
    assert [n for n in os.listdir(folder) if n.startswith("dg-")]
    assert _child("warm", folder) == first
    # kept again by a process that finds it in JAX's own cache (an executable JAX read back from
    # there did not survive being written out again), also where JAX compiled with its cache
    # first, which made JAX keep using it: the first such process writes the program into JAX's
    # cache, the second found it there and kept what it read
    for mode in ("cold", "busy", "busy"):
        for name in os.listdir(folder):
            if name.startswith("dg-"):
                os.remove(os.path.join(folder, name))
        assert _child(mode, folder) == first
        assert _child("warm", folder) == first
    _, want = _program(SOURCE, 0.5, 1.5, backend="numpy")
    assert abs(first - want) <= 1e-12 * abs(want)


def test_a_damaged_file_is_compiled_again(tmp_path, monkeypatch):
    monkeypatch.setenv("DG_XLA_CACHE", str(tmp_path))
    from dsl.backends.xla import runtime
    monkeypatch.setitem(runtime._loaded, "folder", str(tmp_path))
    _, want = _program(SOURCE, 0.5, 1.5)
    (name,) = [n for n in os.listdir(tmp_path) if n.startswith("dg-")]
    with open(os.path.join(tmp_path, name), "wb") as f:
        f.write(b"not an executable")
    _, again = _program(SOURCE, 0.5, 1.5)
    assert again == want


def test_a_program_xla_compiles_with_a_call_out_of_itself_is_not_kept(tmp_path, monkeypatch):
    # LAPACK's factorisations are custom calls, whose handlers a new process registers only when
    # it lowers such a program: an executable read back before that crashed the process
    from dsl.backends.xla import runtime
    monkeypatch.setitem(runtime._loaded, "folder", str(tmp_path))
    src = "fn f(x) {\n  return sum(cholesky(x @ transpose(x) + 3.0 * eye(3)))\n}\n"
    i = dsl.Interpreter()
    i.run(src + 'let g = jit(grad(f), backend="xla")')
    g, x = i.lookup("g"), np.linspace(0.1, 0.9, 9).reshape(3, 3)
    g(x)
    got = g(x)
    (entries,) = g.call.entries.values()
    assert entries[0].xla.why is None
    np.testing.assert_allclose(got, i.lookup("grad")(i.lookup("f"))(x), rtol=1e-10)
    assert not [n for n in os.listdir(tmp_path) if n.startswith("dg-")]


def test_a_change_to_any_of_dgs_modules_is_a_new_key():
    # the lowering reads more than the backend's own files (a primitive's flags, the plan): a
    # kept program compiled by an older dg must not be read back by a newer one
    path = os.path.join(os.path.dirname(dsl.__file__), "core", "primitives", "matrix.py")
    st = os.stat(path)
    program, _ = _program(SOURCE, 0.5, 1.5)
    before = _key(program, [0.5, 1.5])
    try:
        os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 10 ** 9))
        disk._backend_source.cache_clear()
        assert _key(program, [0.5, 1.5]) != before
    finally:
        os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
        disk._backend_source.cache_clear()
    assert _key(program, [0.5, 1.5]) == before
