"""The stdlib's scientific pieces: optim's adamw, rmsprop, schedules and L-BFGS; nn's embedding,
dropout and multi-head attention; ode's solvers and their gradients (by dg's reverse mode
through the solver's loop), against closed forms, numpy and, where installed, JAX."""

import io
import math

import numpy as np
import pytest

import dsl
from dsl.errors import DgError
from gradcheck import check


def run(src, **values):
    """An interpreter (seed 0) that has run src with `values` bound."""
    interp = dsl.Interpreter(seed=0)
    for name, v in values.items():
        interp.set(name, v)
    interp.run(src, "t.dg")
    return interp


# ---------------------------------------------------------------- optim
def test_adamw_is_adam_with_decoupled_weight_decay_and_rmsprop_its_formula():
    i = run("import optim\nlet w = tensor([1.0, -2.0])\nlet g = tensor([0.5, -0.25])\n"
            "let a = optim.adamw(w, g, optim.adamw_init(w), 0.1)[0]\n"
            "let b = optim.adam(w, g, optim.adam_init(w), 0.1, weight_decay=0.01)[0]\n"
            "let r, st = optim.rmsprop(w, g, optim.rmsprop_init(w), 0.1)\n"
            "let r2 = optim.rmsprop(r, g, st, 0.1)[0]")
    np.testing.assert_array_equal(i.get("a"), i.get("b"))
    w, g = np.array([1.0, -2.0]), np.array([0.5, -0.25])
    v = 0.01 * g * g
    r = w - 0.1 * g / (np.sqrt(v) + 1e-8)
    v2 = 0.99 * v + 0.01 * g * g
    np.testing.assert_allclose(i.get("r"), r, rtol=1e-14, atol=1e-14)
    np.testing.assert_allclose(i.get("r2"), r - 0.1 * g / (np.sqrt(v2) + 1e-8), rtol=1e-14, atol=1e-14)


def test_schedules_warm_up_and_decay_as_optaxs():
    i = run("import optim\nlet c = optim.cosine_schedule(1.0, 100, final=0.1)\n"
            "let w = optim.warmup_cosine_schedule(0.5, 10, 110)\n"
            "let r = (c(0), c(50), c(100), c(150), w(0), w(5), w(10), w(60), w(110), w(500))")
    want = (1.0, 0.55, 0.1, 0.1, 0.0, 0.25, 0.5, 0.25, 0.0, 0.0)
    np.testing.assert_allclose(i.get("r"), want, atol=1e-15)


def test_lbfgs_finds_the_minimum_of_rosenbrock_and_of_a_least_squares_fit_over_a_struct():
    rng = np.random.default_rng(3)
    a, b = rng.normal(size=(20, 3)), rng.normal(size=20)
    i = run("import optim\nfn rosen(p) { return (1.0 - p[0]) ** 2 + 100.0 * (p[1] - p[0] ** 2) ** 2 }\n"
            "let p, l = optim.lbfgs(rosen, tensor([-1.2, 1.0]), steps=200)\n"
            "struct Fit { w, c }\n"
            "fn sq(f) { return sum((a @ f.w + f.c - b) ** 2) }\n"
            "let fit, lf = optim.lbfgs(sq, Fit(w=zeros(3), c=0.0))", a=a, b=b)
    np.testing.assert_allclose(i.get("p"), [1.0, 1.0], atol=1e-6)
    assert i.get("l") < 1e-12
    design = np.hstack([a, np.ones((20, 1))])
    want = np.linalg.lstsq(design, b, rcond=None)[0]
    fit = i.get("fit")
    np.testing.assert_allclose(np.append(fit.w, fit.c), want, atol=1e-7)


def test_lbfgs_stops_where_the_loss_stops_improving_beyond_its_rounding():
    # a loss whose rounding keeps its gradient from vanishing (an adaptive ODE solver's, here a
    # term of size 1e-14 that oscillates fast): the line search went on halving for steps that
    # only rounded, 542 evaluations where 9 reach the same point
    src = ("import optim\nfn f(p) {\n    print(\"e\")\n"
           "    return sum((p - [1.0, 2.0]) ** 2) + 1e-14 * sum(sin(1e8 * p))\n}\n")
    evaluations = []
    for options in ("", ", ftol=0.0"):
        out = io.StringIO()
        i = dsl.Interpreter(stdout=out)
        i.run(src + f"let p, l = optim.lbfgs(f, zeros((2,)){options})", "t.dg")
        np.testing.assert_allclose(i.get("p"), [1.0, 2.0], atol=1e-6)
        evaluations.append(out.getvalue().count("e"))
    assert evaluations[0] < 20 and evaluations[1] > 100, evaluations


def test_lbfgs_leaves_a_name_a_count_and_a_flag_among_the_parameters_as_they_are():
    # a name or a count beside the floats (grad gives none for them) was subtracted from itself
    i = run('import optim\nstruct M { w, name, n, on }\n'
            'let m, l = optim.lbfgs(fn(m) => sum((m.w - [1.0, 2.0]) ** 2) * m.n, M([0.0, 0.0], "model", 3, true))\n'
            'let p, lp = optim.lbfgs(fn(p) => (p["w"] - 2.0) ** 2, {"w": 0.0, "name": "x", "k": none})')
    m, p = i.get("m"), i.get("p")
    np.testing.assert_allclose(m.w, [1.0, 2.0], atol=1e-7)
    assert (m.name, m.n, m.on) == ("model", 3, True) and i.get("l") < 1e-12
    assert abs(p["w"] - 2.0) < 1e-7 and (p["name"], p["k"]) == ("x", None)


def test_lbfgs_under_jit_keeps_its_loops_rolled_and_gives_the_eager_minimum():
    # its history is tensors of fixed shape (a tuple that grew wrote the loop out, staging on
    # every call), its line search rolled in the loop's body also where it takes no step
    i = run("import optim\nfn rosen(p) { return sum(100.0 * (p[1:] - p[:-1] ** 2) ** 2 + (1.0 - p[:-1]) ** 2) }\n"
            "let fast = jit(fn(p) => optim.lbfgs(rosen, p, steps=100))\n"
            "let slow = fn(p) => optim.lbfgs(rosen, p, steps=100)")
    fast, slow = i.lookup("fast"), i.lookup("slow")
    starts = np.random.default_rng(0).normal(size=(6, 4))
    for p in starts:
        (got, got_loss), (want, want_loss) = fast(p), slow(p)
        np.testing.assert_array_equal(got, want)
        assert got_loss == want_loss
    assert sum(len(entries) for entries in fast.call.entries.values()) <= 2
    steps = sum(len(e.program.steps) for entries in fast.call.entries.values() for e in entries)
    assert steps < 1500     # (its loops written out: 58,585 steps in six recordings for these starts)


# ---------------------------------------------------------------- nn
def test_embedding_looks_rows_up_and_dropout_keeps_the_mean():
    i = run("import nn\nlet e = nn.embedding(10, 4)\nlet rows = nn.embed(e, [[1.0, 2.0], [9.0, 1.0]])\n"
            "let x = ones((20000,))\nlet d = nn.dropout(x, 0.25, key=rng(1))\n"
            "let same = nn.dropout(x, 0.25, key=rng(1))\nlet off = nn.dropout(x, 0.25, training=false)\n"
            "let g = grad(fn(v) => sum(nn.dropout(v, 0.25, key=rng(1))))(x)")
    table = i.get("e").table
    np.testing.assert_array_equal(i.get("rows"), table[[[1, 2], [9, 1]]])
    d = i.get("d")
    assert set(np.unique(d)) == {0.0, 1.0 / 0.75} and abs(np.mean(d == 0.0) - 0.25) < 0.01
    np.testing.assert_array_equal(d, i.get("same"))
    np.testing.assert_array_equal(i.get("off"), np.ones(20000))
    np.testing.assert_array_equal(i.get("g"), d)


def _softmax(z):
    e = np.exp(z - z.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def test_multi_head_attention_is_the_papers_formula():
    x = np.random.default_rng(4).normal(size=(2, 5, 8))
    i = run("import nn\nlet att = nn.multi_head_attention(8, 2)\nlet y = nn.attention(att, x)\n"
            "let yc = nn.attention(att, x, causal=true)\nlet x2 = x\nx2[:, 4, :] = 0.0\n"
            "let yc2 = nn.attention(att, x2, causal=true)", x=x)
    att = i.get("att")
    for causal, got in ((False, i.get("y")), (True, i.get("yc"))):
        heads = []
        for h in range(2):
            cols = slice(4 * h, 4 * h + 4)
            q, k, v = (x @ w[:, cols] for w in (att.wq, att.wk, att.wv))
            s = q @ k.transpose(0, 2, 1) / 2.0
            if causal:
                s = np.where(np.tril(np.ones((5, 5))) > 0, s, -1e30)
            heads.append(_softmax(s) @ v)
        np.testing.assert_allclose(got, np.concatenate(heads, axis=-1) @ att.wo, rtol=1e-12, atol=1e-13)
    # causal: positions before the last never see it
    np.testing.assert_allclose(i.get("yc")[:, :4], i.get("yc2")[:, :4], rtol=1e-12)
    check("nn.attention(att, x, causal=true)", prelude="import nn\nlet att = nn.multi_head_attention(4, 2)",
          x=np.random.default_rng(5).normal(size=(3, 4)))


# ---------------------------------------------------------------- ode
def test_odeint_solves_decay_and_an_oscillator_with_exact_gradients_of_the_solution():
    i = run("import ode\nfn decay(y, t, k) { return -k * y }\nlet ts = linspace(0.0, 2.0, 5)\n"
            "let ys = ode.odeint(decay, 1.0, ts, 0.5)\n"
            "let rk = ode.odeint(decay, 1.0, ts, 0.5, method=\"rk4\")\n"
            "let g = grad(fn(k) => ode.odeint(decay, 1.0, ts, k, rtol=1e-10, atol=1e-12)[4])(0.5)\n"
            "let gj = jit(grad(fn(k) => ode.odeint(decay, 1.0, ts, k, method=\"rk4\")[4]))(0.5)\n"
            "fn osc(y, t) { return tensor([y[1], -4.0 * y[0]]) }\n"
            "let yo = ode.odeint(osc, tensor([1.0, 0.0]), linspace(0.0, 10.0, 3), rtol=1e-10, atol=1e-12)\n"
            "let g0 = grad(fn(y0) => ode.odeint(osc, y0, linspace(0.0, 3.0, 2), rtol=1e-10, atol=1e-12)[1, 0])"
            "(tensor([1.0, 0.0]))")
    ts = np.linspace(0.0, 2.0, 5)
    np.testing.assert_allclose(i.get("ys"), np.exp(-0.5 * ts), rtol=1e-6)
    np.testing.assert_allclose(i.get("rk"), np.exp(-0.5 * ts), rtol=1e-8)
    assert i.get("g") == pytest.approx(-2.0 * math.exp(-1.0), rel=1e-8)
    assert i.get("gj") == pytest.approx(-2.0 * math.exp(-1.0), rel=1e-7)
    np.testing.assert_allclose(i.get("yo")[2], [math.cos(20.0), -2.0 * math.sin(20.0)], atol=1e-8)
    # y(3) = y0 cos(6) + y0' sin(6) / 2
    np.testing.assert_allclose(i.get("g0"), [math.cos(6.0), math.sin(6.0) / 2.0], atol=1e-8)


def test_odeint_stages_its_loop_over_the_times_once_under_jit(capsys):
    # the solvers wrote each solution into a tuple grown by one item an iteration, which jit
    # writes out (a copy of the loop per time, every substep inside it)
    i = run("import ode\nfn decay(y, t, k) { return -k * y }\nlet ts = linspace(0.0, 2.0, 9)\n"
            "let g4 = jit(grad(fn(k) => sum(ode.odeint(decay, tensor([1.0, 2.0]), ts, k, method=\"rk4\"))), explain=true)\n"
            "let g5 = jit(grad(fn(k) => sum(ode.odeint(decay, tensor([1.0, 2.0]), ts, k))), explain=true)\n"
            "let a = (g4(0.5), g5(0.5))")
    said = capsys.readouterr().err
    assert "written out" not in said and said.count("staging it") == 2, said
    ts = np.linspace(0.0, 2.0, 9)
    want = -3.0 * np.sum(ts * np.exp(-0.5 * ts))      # d/dk of sum (1 + 2) exp(-k t)
    assert i.get("a")[0] == pytest.approx(want, rel=1e-7) and i.get("a")[1] == pytest.approx(want, rel=1e-5)


# a Lotka-Volterra model and 41 output times, whose dopri5 steps per interval vary (one, where
# the step has grown past the interval)
LOTKA_VOLTERRA = ("import ode\nfn lv(y, t, p) {\n"
                  "    return [p[0] * y[0] - p[1] * y[0] * y[1], -p[2] * y[1] + p[3] * y[0] * y[1]]\n}\n"
                  "let ts = linspace(0.0, 10.0, 41)\n")


def test_a_dopri5_fit_stages_once_under_jit_for_every_parameter(capsys):
    # the adaptive solver's loop was written out where one step reached the next time, and f's
    # optional args were compared with none by reading the parameters' values: jit staged again
    # on every call with new parameters (100 adam steps: 145 s, now a few seconds)
    i = run(LOTKA_VOLTERRA + "fn loss(p) { return sum(ode.odeint(lv, [10.0, 5.0], ts, p) ** 2) }\n"
            "let fast = jit(value_and_grad(loss), explain=true)\nlet slow = value_and_grad(loss)")
    fast, slow = i.lookup("fast"), i.lookup("slow")
    for p in ([0.9, 0.12, 1.4, 0.08], [1.0, 0.1, 1.5, 0.075], [0.95, 0.11, 1.45, 0.07]):
        (v1, g1), (v2, g2) = fast(np.array(p)), slow(np.array(p))
        assert v1 == pytest.approx(v2, rel=1e-12)
        np.testing.assert_allclose(g1, g2, rtol=1e-10)
    said = capsys.readouterr().err
    assert "written out" not in said and said.count("staging it") <= 2, said


@pytest.mark.parametrize("kept", ["a tensor", "a tuple"])
def test_a_dopri5_gradient_in_each_iteration_of_a_loop_stays_rolled_under_jit(kept, capsys, monkeypatch):
    # the loop's body begins a derivative whose boxes the solver's loops met as values of an
    # older trace (so the loop over the times was not staged), and, with the outer loop written
    # out (a tuple that grows), the step counter came back from the time loop's first iteration
    # as an int and from its second as a staged value (so it was written out). The first
    # staging's loop stops at a guard of its 36,000-step body on its second iteration: that
    # iteration is replayed, where compiling it, and then its exact code, took 2.5 s
    from dsl.backends import codegen
    compiled, compile_one = [], codegen._compile
    monkeypatch.setattr(codegen, "_compile", lambda p, name, exact: compiled.append(len(p.steps))
                        or compile_one(p, name, exact))
    keep = ("let acc = zeros((3,))", "acc[k] = v") if kept == "a tensor" else ("let acc = ()", "acc = acc + (v,)")
    i = run(LOTKA_VOLTERRA + "fn loss(p) { return sum(ode.dopri5(lv, [10.0, 5.0], ts, p)) }\n"
            f"fn many(p) {{\n    {keep[0]}\n    for k in range(3) {{\n"
            f"        let v = value_and_grad(loss)(p * (1.0 + 0.01 * k))[0]\n        {keep[1]}\n    }}\n"
            "    return acc\n}\nlet fast = jit(many, explain=true)")
    p = np.array([0.9, 0.12, 1.4, 0.08])
    np.testing.assert_allclose(np.array(i.lookup("fast")(p)), np.array(i.lookup("many")(p)), rtol=1e-12)
    said = capsys.readouterr().err
    assert "ode.dg" not in said.split("rolled in the body")[-1] and said.count("staging it") <= 2, said
    assert max(compiled) < 10_000, compiled


def test_odeint_against_jax():
    jax = pytest.importorskip("jax")
    jax.config.update("jax_enable_x64", True)
    from jax.experimental.ode import odeint
    jnp = jax.numpy

    def f(y, t, a, b):
        return jnp.stack([a * y[0] - b * y[0] * y[1], b * y[0] * y[1] - y[1]])
    ts = np.linspace(0.0, 4.0, 6)

    def loss(p):
        return jnp.sum(odeint(f, jnp.array([1.0, 0.5]), ts, p[0], p[1], rtol=1e-11, atol=1e-12) ** 2)
    p = np.array([1.1, 0.7])
    want_value, want_grad = jax.value_and_grad(loss)(p)
    i = run("import ode\nfn f(y, t, p) { return tensor([p[0] * y[0] - p[1] * y[0] * y[1], p[1] * y[0] * y[1] - y[1]]) }\n"
            "fn loss(p) { return sum(ode.odeint(f, tensor([1.0, 0.5]), ts, p, rtol=1e-11, atol=1e-12) ** 2) }\n"
            "let r = value_and_grad(loss)(p)", ts=ts, p=p)
    value, g = i.get("r")
    assert value == pytest.approx(float(want_value), rel=1e-8)
    np.testing.assert_allclose(g, np.asarray(want_grad), rtol=1e-6)


def test_odeint_errors_speak_dg():
    with pytest.raises(DgError) as info:
        run("import ode\nlet y = ode.odeint(fn(y, t) => -y, 1.0, linspace(0.0, 1.0, 3), method=\"euler\")")
    assert "method must be" in info.value.message
    with pytest.raises(DgError) as info:
        run("import ode\nlet y = ode.odeint(fn(y, t) => -y, 1.0, linspace(0.0, 1.0, 3), max_steps=2)")
    assert "more than 2 steps" in info.value.message
