"""The XLA backend away from the setting it was written on: a JAX that no longer knows an option
dg compiles with, and a GPU, whose results come back to the host by copies (docs/xla.md)."""

import numpy as np
import pytest

import dsl

pytest.importorskip("jax")


def test_an_xla_that_no_longer_knows_the_classic_cpu_emitters_option_compiles_without_it(monkeypatch):
    # JAX 0.11 removed the option: asking for it failed every compilation on the CPU
    from dsl.backends.xla import runtime
    jax = pytest.importorskip("jax")
    real = jax.jit

    def strict(fn, **kw):       # an XLA that knows no compiler options
        if kw.get("compiler_options"):
            raise RuntimeError("INVALID_ARGUMENT: No such compile option: 'xla_cpu_use_fusion_emitters'")
        return real(fn, **kw)
    monkeypatch.setattr(jax, "jit", strict)
    monkeypatch.setitem(runtime._loaded, "options", {"xla_cpu_use_fusion_emitters": False})
    monkeypatch.setenv("DG_XLA_CACHE", "")
    i = dsl.Interpreter()
    i.run("fn f(x) { return sum(sin(x) * x) }\nlet g = jit(grad(f), backend=\"xla\")")
    x = np.linspace(0.0, 1.0, 5)
    for _ in range(2):      # the first call stages; the second compiles
        np.testing.assert_allclose(i.lookup("g")(x), np.sin(x) + x * np.cos(x), rtol=1e-12)
    assert runtime._loaded["options"] is None
    assert not runtime.refused(RuntimeError("No such compile option"))      # dropped once; others raise


def test_off_the_cpu_every_result_starts_its_copy_to_the_host_before_the_first_is_read(monkeypatch):
    # on a GPU each read waited for its own copy: the MLP step's four gradients took 3.7 ms, 1.7 ms
    jax = pytest.importorskip("jax")
    from jax._src.array import ArrayImpl
    from dsl.backends.xla import runtime
    started = []
    real = ArrayImpl.copy_to_host_async

    def spied(self):
        started.append(self.shape)
        return real(self)
    monkeypatch.setattr(ArrayImpl, "copy_to_host_async", spied)
    monkeypatch.setattr(jax, "default_backend", lambda: "gpu")
    monkeypatch.setitem(runtime._loaded, "options", None)
    monkeypatch.setitem(runtime._loaded, "in_place", False)
    i = dsl.Interpreter()
    i.run("fn f(w, x) { return sum(tanh(x @ w) ** 2) }\nlet g = jit(value_and_grad(f), backend=\"xla\")")
    # (a gradient larger than code.PACKED_ENTRIES: smaller ones travel in the vector of floats)
    w, x = np.linspace(0.0, 0.01, 4800).reshape(80, 60), np.linspace(-1.0, 1.0, 320).reshape(4, 80)
    for _ in range(2):      # the first call stages; the second runs on XLA
        value, grad = i.lookup("g")(w, x)
    t = np.tanh(x @ w)
    np.testing.assert_allclose(grad, x.T @ (2 * t * (1 - t ** 2)), rtol=1e-12)
    assert value == pytest.approx(np.sum(t ** 2), rel=1e-12)
    # the flag and value in one vector, and the gradient: both copies started
    assert sorted(started, key=len) == [(2,), (80, 60)]
