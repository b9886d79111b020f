"""dg as a GradBench tool (bench/gradbench): the protocol end to end, and every eval's program
against an independent reference written here in numpy (or central differences), on small inputs.
GradBench itself is not needed: docs/gradbench.md shows how to run its real evals."""

import json
import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))       # bench/ is beside dsl/ at the top of the checkout

from bench.gradbench.protocol import Tool  # noqa: E402
RNG = np.random.default_rng(2026)


@pytest.fixture(scope="module")
def tool():
    """One tool for the module, as GradBench uses one per eval."""
    return Tool()


def run(tool, module, function, data):
    """Evaluate and return the output (a failure fails the test with its message)."""
    reply = tool.answer(json.dumps({"id": 1, "kind": "evaluate", "module": module, "function": function,
                                    "input": data}))
    assert reply["success"], reply.get("error")
    return reply["output"]


# the evals whose programs use jit run three times, so that the output checked is the compiled
# code's (the first run stages); `compiled` then checks that compiled code ran
JITTED = {"min_runs": 3, "min_seconds": 0}


def compiled(tool, module, function, rolled=False):
    """Whether the module's jitted function has compiled code for some signature (and, with
    `rolled`, a loop staged once as a Loop step rather than written out)."""
    entry = tool.modules[module][1][function]
    jitted = (entry[1] if type(entry) is tuple else entry).call
    return any(e.code is not None and (not rolled or any(step[1] == "Loop" for step in e.program.steps))
               for es in jitted.entries.values() for e in es)


def fd(f, x, h=1e-6):
    """Central differences of scalar f at the array x."""
    g = np.zeros_like(x)
    for k in range(x.size):
        e = np.zeros_like(x)
        e.flat[k] = h
        g.flat[k] = (f(x + e) - f(x - e)) / (2 * h)
    return g


# ---------------------------------------------------------------- the protocol
def test_the_protocol_end_to_end_through_a_subprocess():
    messages = [
        {"id": 0, "kind": "start", "eval": "hello"},
        {"id": 1, "kind": "define", "module": "lse"},
        {"id": 2, "kind": "evaluate", "module": "lse", "function": "primal",
         "input": {"x": [1.0, 2.0, 3.0], "min_runs": 3, "min_seconds": 0}},
        {"id": 3, "kind": "analysis", "of": 2, "valid": True},
        {"id": 4, "kind": "evaluate", "module": "lse", "function": "no_such_function",
         "input": {"x": [1.0], "min_runs": 1, "min_seconds": 0}},
        "this line is not JSON",
        {"id": 6, "kind": "define", "module": "no_such_module"},
        {"id": 7, "kind": "evaluate", "module": "lse", "function": "gradient",
         "input": {"x": "not numbers", "min_runs": 1, "min_seconds": 0}},
        {"id": 8, "kind": "evaluate", "module": "hello", "function": "double", "input": 4.0},
        {"id": 9, "kind": "end"},
    ]
    text = "".join((m if isinstance(m, str) else json.dumps(m)) + "\n" for m in messages)
    done = subprocess.run([sys.executable, "-m", "bench.gradbench"], input=text, cwd=ROOT, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    replies = [json.loads(line) for line in done.stdout.splitlines()]
    assert len(replies) == len(messages)
    start, define, primal, analysis, unknown, malformed, no_module, bad_input, double, end = replies
    assert start == {"id": 0, "tool": "dg"}
    assert define["id"] == 1 and define["success"] is True
    assert primal["success"] and primal["output"] == pytest.approx(math.log(math.exp(1) + math.exp(2) + math.exp(3)))
    assert [t["name"] for t in primal["timings"]] == ["evaluate"] * 3
    assert all(isinstance(t["nanoseconds"], int) and t["nanoseconds"] > 0 for t in primal["timings"])
    assert analysis == {"id": 3}
    assert unknown["success"] is False and "no_such_function" in unknown["error"] and "\n" not in unknown["error"]
    assert malformed["success"] is False and "not JSON" in malformed["error"]
    assert no_module["success"] is False and "no_such_module" in no_module["error"]
    assert bad_input["success"] is False and bad_input["error"].startswith("error[")
    assert double == {"id": 8, "success": True, "output": 8.0, "timings": double["timings"]}
    assert end == {"id": 9}


FAKE_EVAL = """
import json, math, sys
def ask(message):
    print(json.dumps(message), flush=True)
    return json.loads(sys.stdin.readline())
ask({"id": 0, "kind": "start", "eval": "lse"})
ask({"id": 1, "kind": "define", "module": "lse"})
for k, (x, claim) in enumerate([([1.0, 2.0], None), ([0.0, 0.0], 5.0)]):
    answer = ask({"id": 2 + 2 * k, "kind": "evaluate", "module": "lse", "function": "primal",
                  "description": f"n={len(x)}", "input": {"x": x, "min_runs": 2, "min_seconds": 0}})
    truth = math.log(sum(math.exp(v) for v in x)) if claim is None else claim
    ask({"id": 3 + 2 * k, "kind": "analysis", "of": 2 + 2 * k, "valid": abs(answer["output"] - truth) < 1e-9})
ask({"id": 6, "kind": "evaluate", "module": "lse", "function": "nope", "input": {"x": [1.0]}})
print(json.dumps({"id": 7, "kind": "end"}), flush=True)
"""


def test_the_pipe_runs_an_eval_against_dg_and_counts_its_verdicts(tmp_path):
    script = tmp_path / "fake_eval.py"
    script.write_text(FAKE_EVAL)
    done = subprocess.run([sys.executable, "-m", "bench.gradbench.pipe", f"{sys.executable} {script}"],
                          cwd=ROOT, capture_output=True, text=True, timeout=120)
    lines = done.stdout.splitlines()
    assert done.returncode == 1, done.stdout + done.stderr       # one invalid, one failed
    assert lines[0].startswith("ok  primal       n=2") and "median run" in lines[0] and lines[0].endswith("runs 2")
    assert lines[1].startswith("BAD primal       n=2")
    assert lines[2].startswith("FAILED nope") and "nope" in lines[2]
    assert lines[-1] == "gradbench lse: 1 valid, 1 invalid, 1 failed of 3 evaluations"


def test_the_tables_come_from_saved_logs_and_leave_compiled_and_unwaited_runs_out(tmp_path, monkeypatch):
    from bench.gradbench import table

    def log(lines, valid):
        return "".join(f"ok  {fn:12s} {size:12s} median run {ms:10.3f} ms  wall {1.0:9.1f} ms  runs {n}\n"
                       for fn, size, ms, n in lines) + f"gradbench lse: {valid} valid, 0 invalid, 0 failed of 3 evaluations\n"
    (tmp_path / "dg_lse.log").write_text(log([("primal", "n=1", 2.0, 50), ("gradient", "n=1", 8.0, 20),
                                              ("primal", "n=2", 4.0, 30)], 3))
    (tmp_path / "xla_lse.log").write_text(log([("primal", "n=1", 1.0, 90), ("gradient", "n=1", 1200.0, 2),
                                               ("primal", "n=2", 1.0, 90)], 3))
    (tmp_path / "jax_lse.log").write_text(log([("primal", "n=1", 1.0, 99), ("gradient", "n=1", 2.0, 90),
                                               ("primal", "n=2", 0.001, 999)], 3))
    (tmp_path / "jax-waited_lse.log").write_text(log([("primal", "n=1", 2.0, 99), ("gradient", "n=1", 4.0, 90),
                                                      ("primal", "n=2", 2.0, 50)], 3))
    monkeypatch.setattr(table, "RESULTS", tmp_path)
    text = table.tables()
    # dg / jax: 2.0 and 4.0 (n=2's jax time is under a thousandth of dg's: left out) -> sqrt(8)
    # dg / jax waited: 1, 2 and 2 -> 4^(1/3); XLA / dg: 0.5 and 0.25 (the compiled single run is
    # left out) -> sqrt(1/8); XLA / jax: n=1's primal; XLA / jax waited: 0.5 and 0.5
    assert "| lse | 3 of 3 | 3 of 3 | 2.83x (2) | 1.59x (3) | — | 0.35x (2) | 1.00x (1) | 0.50x (2) |" in text, text
    assert "| lse | gradient | n=1 | 8.000 | 1,200.000 † | 2.000 | 4.000 | — |" in text
    assert "| lse | primal | n=2 | 4.000 | 1.000 | 0.001 ‡ | 2.000 | — |" in text
    assert "| ode | — | — | — | — | — | — | — | — |" in text


def test_the_jax_tool_waited_times_each_call_up_to_its_results(monkeypatch):
    # bench/gradbench/waited.py: GradBench's timing decorators wrapped so that the timed call
    # ends with jax.block_until_ready on its result (the tool's own code unchanged)
    from types import SimpleNamespace
    from bench.gradbench import waited
    events = []
    clock = iter(range(100))

    def multiple_runs(*, pre, post):
        def decorate(fn):
            def timed(raw):
                start = next(clock)
                out = fn(pre(raw))
                events.append(("timer stops", next(clock) - start))
                return post(out)
            return timed
        return decorate
    fake_wrap = SimpleNamespace(function=multiple_runs, multiple_runs=multiple_runs)
    flags = {}
    fake_jax = SimpleNamespace(block_until_ready=lambda v: events.append(("waited for", v)) or v,
                               config=SimpleNamespace(update=flags.__setitem__))
    waited.prepare(fake_jax, fake_wrap)
    assert flags == {"jax_enable_x64": True}        # float64, as dg (GradBench's ode module leaves float32)
    primal = fake_wrap.multiple_runs(pre=float, post=str)(lambda x: x * 2.0)
    assert primal("1.5") == "3.0"
    assert events == [("waited for", 3.0), ("timer stops", 1)]       # the wait is inside the timed call


def test_min_seconds_repeats_the_run(tool):
    reply = tool.answer(json.dumps({"id": 5, "kind": "evaluate", "module": "lse", "function": "gradient",
                                    "input": {"x": [0.5, 1.5], "min_runs": 1, "min_seconds": 0.05}}))
    assert reply["success"]
    assert sum(t["nanoseconds"] for t in reply["timings"]) >= 0.05e9


# ---------------------------------------------------------------- the evals, small
def test_hello(tool):
    assert run(tool, "hello", "square", 3.0) == 9.0
    assert run(tool, "hello", "double", 3.0) == 6.0


def test_lse(tool):
    x = RNG.uniform(-5, 5, 7)
    runs = {"min_runs": 1, "min_seconds": 0}
    assert run(tool, "lse", "primal", {"x": x.tolist(), **runs}) == pytest.approx(np.log(np.sum(np.exp(x))))
    np.testing.assert_allclose(run(tool, "lse", "gradient", {"x": x.tolist(), **runs}),
                               np.exp(x) / np.sum(np.exp(x)), rtol=1e-12)


def _llsq(x, n):
    """cmpad's llsq_obj in numpy, with its gradient by hand."""
    t = -1 + np.arange(n) * 2 / (n - 1)
    powers = t[:, None] ** np.arange(len(x))[None, :]
    r = np.sign(t) - powers @ x
    return 0.5 * np.sum(r * r), -(powers.T @ r)


def test_llsq(tool):
    x, n = RNG.random(5), 9
    value, gradient = _llsq(x, n)
    assert run(tool, "llsq", "primal", {"x": x.tolist(), "n": n, **JITTED}) == pytest.approx(value, rel=1e-12)
    np.testing.assert_allclose(run(tool, "llsq", "gradient", {"x": x.tolist(), "n": n, **JITTED}), gradient,
                               rtol=1e-10)
    assert compiled(tool, "llsq", "primal") and compiled(tool, "llsq", "gradient")


@pytest.mark.parametrize("ell", [1, 2, 3, 5])
def test_det(tool, ell):
    a = RNG.random((ell, ell))
    data = {"A": a.reshape(-1).tolist(), "ell": ell, **JITTED}
    assert run(tool, "det", "primal", data) == pytest.approx(np.linalg.det(a), rel=1e-10)
    cofactors = np.linalg.det(a) * np.linalg.inv(a).T          # d det / dA
    np.testing.assert_allclose(run(tool, "det", "gradient", data), cofactors.reshape(-1), rtol=1e-9)
    assert compiled(tool, "det", "primal") and compiled(tool, "det", "gradient")


def _ode(x, s):
    """The eval's ODE by classic Runge-Kutta, in numpy."""
    def rhs(y):
        return x * np.concatenate(([1.0], y[:-1]))
    h = 2.0 / s
    y = np.zeros_like(x)
    for _ in range(s):
        k1 = rhs(y)
        k2 = rhs(y + h * k1 / 2)
        k3 = rhs(y + h * k2 / 2)
        k4 = rhs(y + h * k3)
        y = y + h * (k1 + 2 * k2 + 2 * k3 + k4) / 6
    return y


def test_ode(tool):
    x, s = RNG.random(5), 4
    np.testing.assert_allclose(run(tool, "ode", "primal", {"x": x.tolist(), "s": s, **JITTED}), _ode(x, s),
                               rtol=1e-12)
    np.testing.assert_allclose(run(tool, "ode", "gradient", {"x": x.tolist(), "s": s, **JITTED}),
                               fd(lambda v: _ode(v, s)[-1], x), rtol=1e-6, atol=1e-9)
    assert compiled(tool, "ode", "primal", rolled=True) and compiled(tool, "ode", "gradient", rolled=True)


def _gmm(alpha, mu, q, l, x, m, gamma):
    """The eval's log posterior in numpy, from its README's formulas."""
    k, d = mu.shape
    n = x.shape[0]
    ls = np.zeros((k, d, d))
    ii = 0
    for c in range(d):
        for r in range(c + 1, d):
            ls[:, r, c] = l[:, ii]
            ii += 1
    qs = np.exp(q)[:, :, None] * np.eye(d) + ls                # Q_k
    diff = x[None, :, :] - mu[:, None, :]                       # k, n, d
    qx = np.einsum("kij,knj->kni", qs, diff)
    beta = alpha[:, None] + q.sum(1)[:, None] - 0.5 * np.sum(qx ** 2, axis=2)
    top = beta.max(0)
    lse_beta = top + np.log(np.exp(beta - top).sum(0))
    lse_alpha = alpha.max() + np.log(np.exp(alpha - alpha.max()).sum())
    likelihood = lse_beta.sum() - n * (d / 2 * math.log(2 * math.pi) + lse_alpha)
    wn = d + m + 1
    log_gamma_d = d * (d - 1) / 4 * math.log(math.pi) + sum(math.lgamma(wn / 2 + (1 - j) / 2) for j in range(1, d + 1))
    prior = (k * (wn * d * math.log(gamma / math.sqrt(2)) - log_gamma_d)
             - 0.5 * gamma ** 2 * (np.sum(np.exp(q) ** 2) + np.sum(l ** 2)) + m * q.sum())
    return likelihood + prior


def test_gmm(tool):
    d, k, n, m, gamma = 3, 2, 6, 1, 1.3
    parts = {"alpha": RNG.normal(size=k), "mu": RNG.uniform(size=(k, d)), "q": RNG.normal(size=(k, d)),
             "l": RNG.normal(size=(k, d * (d - 1) // 2))}
    x = RNG.normal(size=(n, d))
    data = {"d": d, "k": k, "n": n, "x": x.tolist(), "m": m, "gamma": gamma, "min_runs": 1, "min_seconds": 0,
            **{name: v.tolist() for name, v in parts.items()}}
    def objective(**change):
        p = dict(parts, **change)
        return _gmm(p["alpha"], p["mu"], p["q"], p["l"], x, m, gamma)
    assert run(tool, "gmm", "objective", data) == pytest.approx(objective(), rel=1e-10)
    got = run(tool, "gmm", "jacobian", data)
    assert list(got) == ["alpha", "mu", "q", "l"]
    for name, value in parts.items():
        want = fd(lambda v: objective(**{name: v}), value)
        np.testing.assert_allclose(got[name], want, rtol=1e-5, atol=1e-6, err_msg=name)


def test_kmeans(tool):
    points = RNG.random((30, 3))
    centroids = points[-4:]
    data = {"points": points.tolist(), "centroids": centroids.tolist(), "min_runs": 1, "min_seconds": 0}
    dist = ((points[:, None, :] - centroids[None, :, :]) ** 2).sum(-1)
    nearest = dist.argmin(1)
    assert run(tool, "kmeans", "cost", data) == pytest.approx(dist.min(1).sum(), rel=1e-10)
    # J / H with J = 2 sum (c - p) and H = 2 count over each centroid's points: c - their mean
    want = np.stack([centroids[j] - points[nearest == j].mean(0) for j in range(4)])
    np.testing.assert_allclose(run(tool, "kmeans", "dir", data), want, rtol=1e-9, atol=1e-12)


def _lstm(main, extra, state, sequence):
    """ADBench's LSTM objective in numpy."""
    layers, b = main.shape[0] // 2, state.shape[1]
    hidden = [state[2 * i].copy() for i in range(layers)]
    cell = [state[2 * i + 1].copy() for i in range(layers)]
    sig = lambda v: 1 / (1 + np.exp(-v))
    total, count = 0.0, 0
    x_in = sequence[0]
    for t in range(len(sequence) - 1):
        x = x_in * extra[0]
        for i in range(layers):
            gates = np.concatenate((x, hidden[i], x, hidden[i])) * main[2 * i] + main[2 * i + 1]
            f, ig, o, c = sig(gates[:b]), sig(gates[b:2 * b]), sig(gates[2 * b:3 * b]), np.tanh(gates[3 * b:])
            cell[i] = cell[i] * f + ig * c
            hidden[i] = o * np.tanh(cell[i])
            x = hidden[i]
        pred = x * extra[1] + extra[2]
        norm = pred - np.log(np.sum(np.exp(pred)) + 2)
        total += np.sum(sequence[t + 1] * norm)
        count += b
        x_in = sequence[t + 1]
    return -total / count


def test_lstm(tool):
    layers, b, c = 2, 3, 5
    main, extra = RNG.random((2 * layers, 4 * b)), RNG.random((3, b))
    state, sequence = RNG.random((2 * layers, b)), RNG.integers(0, 2, (c, b)).astype(float)
    data = {"main_params": main.tolist(), "extra_params": extra.tolist(), "state": state.tolist(),
            "sequence": sequence.tolist(), **JITTED}
    assert run(tool, "lstm", "objective", data) == pytest.approx(_lstm(main, extra, state, sequence), rel=1e-12)
    want = np.concatenate((fd(lambda v: _lstm(v, extra, state, sequence), main).reshape(-1),
                           fd(lambda v: _lstm(main, v, state, sequence), extra).reshape(-1)))
    np.testing.assert_allclose(run(tool, "lstm", "jacobian", data), want, rtol=1e-6, atol=1e-8)
    assert compiled(tool, "lstm", "objective", rolled=True) and compiled(tool, "lstm", "jacobian", rolled=True)


def _reprojection(cam, x, w, feat):
    """One observation's weighted reprojection error, as ADBench computes it."""
    rot, c, f, x0, rad = cam[0:3], cam[3:6], cam[6], cam[7:9], cam[9:11]
    p = x - c
    theta2 = rot @ rot
    if theta2 != 0:
        theta = math.sqrt(theta2)
        k = rot / theta
        p = p * math.cos(theta) + np.cross(k, p) * math.sin(theta) + k * (k @ p) * (1 - math.cos(theta))
    else:
        p = p + np.cross(rot, p)
    proj = p[:2] / p[2]
    rsq = proj @ proj
    proj = proj * (1 + rad[0] * rsq + rad[1] * rsq * rsq)
    return w * (proj * f + x0 - feat)


def test_ba(tool):
    cam = np.concatenate((RNG.normal(0, 0.3, 3), RNG.normal(0, 1, 3), [400.0], RNG.normal(0, 1, 2),
                          RNG.normal(0, 1e-3, 2)))
    x, w, feat = RNG.normal(0, 1, 3) + [0, 0, 8], 0.7, RNG.normal(0, 10, 2)
    n, m, p = 3, 4, 12
    data = {"n": n, "m": m, "p": p, "cam": cam.tolist(), "x": x.tolist(), "w": w, "feat": feat.tolist(),
            "min_runs": 1, "min_seconds": 0}
    err = _reprojection(cam, x, w, feat)
    got = run(tool, "ba", "objective", data)
    np.testing.assert_allclose(got["reproj_error"]["elements"], err, rtol=1e-10)
    assert got["reproj_error"]["repeated"] == p and got["w_err"]["repeated"] == p
    assert got["w_err"]["element"] == pytest.approx(1 - w * w)
    jac = run(tool, "ba", "jacobian", data)
    # the first block: observation 0 (camera 0, point 0), two rows of 11 + 3 + 1 derivatives
    block = np.zeros((2, 15))
    for r in range(2):
        block[r, :11] = fd(lambda v: _reprojection(v, x, w, feat)[r], cam)
        block[r, 11:14] = fd(lambda v: _reprojection(cam, v, w, feat)[r], x)
        block[r, 14] = (_reprojection(cam, x, w + 1e-6, feat)[r] - _reprojection(cam, x, w - 1e-6, feat)[r]) / 2e-6
    np.testing.assert_allclose(jac["vals"][:30], block.reshape(-1), rtol=1e-5, atol=1e-6)
    assert jac["vals"][30] == pytest.approx(-2 * w)           # d (1 - w^2) / dw, the last entry
    assert jac["rows"][:3] == [0, 15, 30] and jac["rows"][30] == 31 * p
    assert jac["cols"][:15] == list(range(11)) + [11 * n, 11 * n + 1, 11 * n + 2, 11 * n + 3 * m]
    assert jac["cols"][30] == 11 * n + 3 * m + p - 1
    assert all(type(v) is int for v in jac["rows"] + jac["cols"])


def _hand_model(bones=22, verts=7):
    """A small random hand model with GradBench's layout (22 bones: wrist, 5 fingers of 4, forearm)."""
    rel = np.stack([np.vstack([np.hstack([np.linalg.qr(RNG.normal(size=(3, 3)))[0], RNG.normal(size=(3, 1))]),
                               [0, 0, 0, 1]]) for _ in range(bones)])
    inv = np.stack([np.vstack([np.hstack([np.linalg.qr(RNG.normal(size=(3, 3)))[0], RNG.normal(size=(3, 1))]),
                               [0, 0, 0, 1]]) for _ in range(bones)])
    parents = [-1] + [0 if i % 4 == 1 else i - 1 for i in range(1, bones)]
    positions = np.hstack([RNG.normal(size=(verts, 3)), np.ones((verts, 1))])
    weights = RNG.random((verts, bones))
    weights /= weights.sum(1, keepdims=True)
    triangles = RNG.integers(0, verts, (5, 3))
    return {"bone_count": bones, "bone_names": [f"b{i}" for i in range(bones)], "parents": parents,
            "base_relatives": rel.tolist(), "inverse_base_absolutes": inv.tolist(),
            "base_positions": positions.tolist(), "weights": weights.tolist(), "triangles": triangles.tolist(),
            "is_mirrored": False}


def _hand(theta, us, model, points, corr):
    """ADBench's hand objective in numpy (after GradBench's PyTorch tool)."""
    bones = model["bone_count"]
    pose = np.zeros((bones + 3, 3))
    pose[0], pose[1], pose[2] = theta[0:3], 1.0, theta[3:6]
    t, row = 6, 5
    for _ in range(5):
        for i in range(2, 5):
            pose[row, 0] = theta[t]
            t += 1
            if i == 2:
                pose[row, 1] = theta[t]
                t += 1
            row += 1
        row += 1

    def euler(a):
        tx, ty, tz = a[0], a[2], a[1]
        rx = np.array([[1, 0, 0], [0, math.cos(tx), -math.sin(tx)], [0, math.sin(tx), math.cos(tx)]])
        ry = np.array([[math.cos(ty), 0, math.sin(ty)], [0, 1, 0], [-math.sin(ty), 0, math.cos(ty)]])
        rz = np.array([[math.cos(tz), -math.sin(tz), 0], [math.sin(tz), math.cos(tz), 0], [0, 0, 1]])
        return rz @ ry @ rx

    rel = np.array(model["base_relatives"])
    absolutes = []
    for i in range(bones):
        tr = np.eye(4)
        tr[:3, :3] = euler(pose[i + 3])
        r = rel[i] @ tr
        absolutes.append(r if model["parents"][i] == -1 else absolutes[model["parents"][i]] @ r)
    transforms = np.stack(absolutes) @ np.array(model["inverse_base_absolutes"])
    base = np.array(model["base_positions"]).T
    weights = np.array(model["weights"]).T
    positions = np.einsum("bij,jv,bv->iv", transforms, base, weights)[:3]
    aa = pose[0]
    norm = math.sqrt(aa @ aa)
    if norm < 1e-4:
        rot = np.eye(3)
    else:
        x, y, z = aa / norm
        s, c = math.sin(norm), math.cos(norm)
        rot = np.array([[x * x + (1 - x * x) * c, x * y * (1 - c) - z * s, x * z * (1 - c) + y * s],
                        [x * y * (1 - c) + z * s, y * y + (1 - y * y) * c, y * z * (1 - c) - x * s],
                        [x * z * (1 - c) - y * s, z * y * (1 - c) + x * s, z * z + (1 - z * z) * c]])
    v = (rot * pose[1]) @ positions + pose[2][:, None]
    if us is None:
        return (points - v[:, corr].T).reshape(-1)
    tri = np.array(model["triangles"])[corr]
    hand = us[:, 0] * v[:, tri[:, 0]] + us[:, 1] * v[:, tri[:, 1]] + (1 - us[:, 0] - us[:, 1]) * v[:, tri[:, 2]]
    return (points - hand.T).reshape(-1)


@pytest.mark.parametrize("complicated", [False, True])
def test_ht(tool, complicated):
    model = _hand_model()
    npts = 4
    theta = RNG.normal(0, 0.3, 26)
    points = RNG.normal(size=(npts, 3))
    corr = RNG.integers(0, 5 if complicated else 7, npts)
    us = RNG.random((npts, 2)) * 0.5 if complicated else None
    data = {"theta": theta.tolist(), "us": us.tolist() if complicated else [],
            "data": {"model": model, "correspondences": corr.tolist(), "points": points.tolist()},
            "min_runs": 1, "min_seconds": 0}
    err = _hand(theta, us, model, points, corr)
    np.testing.assert_allclose(run(tool, "ht", "objective", data), err, rtol=1e-10, atol=1e-12)
    jac = np.array(run(tool, "ht", "jacobian", data))
    want_theta = np.stack([fd(lambda t: _hand(t, us, model, points, corr)[r], theta) for r in range(3 * npts)])
    if not complicated:
        np.testing.assert_allclose(jac, want_theta, rtol=1e-5, atol=1e-7)
        return
    assert jac.shape == (3 * npts, 28)
    np.testing.assert_allclose(jac[:, 2:], want_theta, rtol=1e-5, atol=1e-7)
    for i in range(npts):           # each point's error moves with its own u only
        for k in range(2):
            def moved(h):
                u = us.copy()
                u[i, k] += h
                return _hand(theta, u, model, points, corr)[3 * i:3 * i + 3]
            np.testing.assert_allclose(jac[3 * i:3 * i + 3, k], (moved(1e-6) - moved(-1e-6)) / 2e-6,
                                       rtol=1e-5, atol=1e-7)


# ---------------------------------------------------------------- nested derivatives
def _argmin(gradient, f, x):
    """GradBench's gradient descent with step adaptation, in numpy."""
    fx, gx, eta, i = f(x), gradient(x), 1e-5, 0
    while True:
        if np.sqrt(gx @ gx) <= 1e-5:
            return x
        if i == 10:
            eta, i = 2 * eta, 0
            continue
        x_new = x - eta * gx
        if np.sqrt((x - x_new) @ (x - x_new)) <= 1e-5:
            return x
        fx_new = f(x_new)
        if fx_new < fx:
            x, fx, gx, i = x_new, fx_new, gradient(x_new), i + 1
        else:
            eta, i = eta / 2, 0


@pytest.mark.parametrize("function", ["ff", "fr", "rf", "rr"])
def test_saddle(tool, function):
    start = np.array([1.0, 1.0])
    # f = |x|^2 - |y|^2: the inner maximiser does not depend on x, so d/dx of the inner max is 2x
    f = lambda p1, p2: p1 @ p1 - p2 @ p2
    inner = _argmin(lambda p2: 2 * p2, lambda p2: -f(start, p2), start)
    r1 = _argmin(lambda p1: 2 * p1, lambda p1: f(p1, inner), start)
    r2 = _argmin(lambda p2: 2 * p2, lambda p2: -f(r1, p2), start)
    got = run(tool, "saddle", function, {"start": start.tolist(), "min_runs": 1, "min_seconds": 0})
    np.testing.assert_allclose(got, np.concatenate((r1, r2)), rtol=1e-6, atol=1e-9)


def _miss(w):
    """The particle's squared miss distance for control w (numpy, the field by hand)."""
    charges = np.array([[10.0, 10.0 - w], [10.0, 0.0]])
    x, xdot, dt = np.array([0.0, 8.0]), np.array([0.75, 0.0]), 0.1
    while True:
        d = x - charges
        field = -np.sum(d / np.sqrt((d ** 2).sum(1))[:, None] ** 3, axis=0)      # grad of sum 1/|x - c|
        x_new = x + dt * xdot
        if x_new[1] <= 0:
            break
        x, xdot = x_new, xdot - dt * field
    x_t_f = x + (-x[1] / xdot[1]) * xdot
    return x_t_f[0] ** 2


@pytest.mark.parametrize("outer,inner", [("forward", "forward"), ("forward", "reverse"), ("reverse", "forward"),
                                         ("reverse", "reverse")])
def test_particle_miss_and_its_derivative_in_every_mode(tool, outer, inner):
    interp, _ = tool.define("particle")
    for w in (0.0, 0.15):
        value = interp.eval(f"miss({w}, gradient_{inner})")
        assert value == pytest.approx(_miss(w), rel=1e-10)
        gradient = interp.eval(f"gradient_{outer}(fn(v) => miss(v[0], gradient_{inner}), [{w}])")
        assert gradient[0] == pytest.approx((_miss(w + 1e-7) - _miss(w - 1e-7)) / 2e-7, rel=1e-5)


def test_particle_solver_finds_the_minimum_of_a_quadratic(tool):
    interp, _ = tool.define("particle")
    for mode in ("forward", "reverse"):
        got = interp.eval(f"argmin(gradient_{mode}, fn(v) => sum((v - [0.3, -0.2]) ** 2), [1.0, 1.0])")
        want = _argmin(lambda v: 2 * (v - [0.3, -0.2]), lambda v: np.sum((v - [0.3, -0.2]) ** 2), np.array([1.0, 1.0]))
        np.testing.assert_allclose(got, want, rtol=1e-9)


def test_particle_reverse_reverse_on_the_eval_input(tool):
    # the value GradBench's eval expects (its own constant)
    assert run(tool, "particle", "rr", {"w": 0.0, "min_runs": 1, "min_seconds": 0}) == pytest.approx(
        0.2071918746486116, abs=1e-4)
