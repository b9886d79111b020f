"""The machine-learning examples in examples/: each runs and reaches its stated outcome.

Each example also asserts its own outcome in dg (a failed assert is a DgError
here); these tests check the printed results and the program's final state
against independent computations where one exists.
"""

import io
import math
import re
from pathlib import Path

import numpy as np
import pytest

import dsl
from dsl.runtime.builtins import files

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
ML_EXAMPLES = ["linear_regression", "two_moons", "projectile", "save_and_resume", "ssm_sequence",
               "per_example_gradients", "ensemble",
               "custom_gradients", "checkpointing", "newton", "csv_logistic", "jit_training", "gaussian_process", "cnn",
               "markov_chain", "robust_regression"]


def run_example(name, argv=(), keep_tape=False):
    """Run examples/NAME.dg in-process; return (its output, the interpreter)."""
    out = io.StringIO()
    interp = dsl.Interpreter(stdout=out, keep_tape=keep_tape)
    interp.bind("argv", tuple(argv))
    interp.run_file(EXAMPLES / f"{name}.dg")
    return out.getvalue(), interp


def number_after(text, label):
    """The number printed right after `label`."""
    match = re.search(re.escape(label) + r"\s*(-?[0-9.]+(?:e-?[0-9]+)?)", text)
    assert match, f"{label!r} not found in:\n{text}"
    return float(match.group(1))


def test_linear_regression_recovers_the_coefficients_and_matches_least_squares():
    out, interp = run_example("linear_regression")
    model = interp.lookup("model")
    np.testing.assert_allclose(model.w, [2.0, -3.5, 1.25], atol=0.02)
    assert model.b == pytest.approx(0.5, abs=0.02)
    x, y = interp.lookup("x"), interp.lookup("y")
    design = np.hstack([x, np.ones((len(x), 1))])
    exact = np.linalg.lstsq(design, y, rcond=None)[0]
    np.testing.assert_allclose(np.append(model.w, model.b), exact, atol=1e-6)
    assert number_after(out, "largest coefficient error") < 0.02


def test_two_moons_mlp_reaches_95_percent_test_accuracy(tmp_path):
    pytest.importorskip("matplotlib")
    out, interp = run_example("two_moons", argv=(str(tmp_path / "loss.png"),))
    assert (tmp_path / "loss.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert f"loss curves written to {tmp_path / 'loss.png'}" in out
    train, held_out = interp.lookup("train_losses"), interp.lookup("test_losses")
    assert len(train) == len(held_out) == 61
    assert train[-1] < 0.1 * train[0] and held_out[-1] < 0.2 * held_out[0]   # the curves the plot shows fall
    assert number_after(out, "test accuracy") >= 0.95
    layers, x, y = interp.lookup("layers"), interp.lookup("x_test"), interp.lookup("y_test")
    h = x
    for i, l in enumerate(layers):
        h = h @ l.w + l.b
        if i < len(layers) - 1:
            h = np.maximum(h, 0)
    assert np.mean((h[:, 0] > 0) == (y == 1)) >= 0.95      # recomputed in numpy
    assert len(x) == 100                                   # a quarter of 400 points held out


def test_projectile_fit_recovers_the_launch_parameters():
    out, interp = run_example("projectile")
    p = interp.lookup("p")
    assert p._name == "Launch"
    assert p.vx == pytest.approx(20.0, abs=0.1) and p.vy == pytest.approx(22.0, abs=0.1)
    assert p.drag * 0.001 == pytest.approx(0.005, abs=0.0002)
    assert number_after(out, "final loss") < 0.005          # the noise variance is 0.0025


def test_save_and_resume_writes_a_loadable_checkpoint(tmp_path):
    path = tmp_path / "model.ckpt"
    out, interp = run_example("save_and_resume", [str(path)])
    assert "resumed training matches 300 uninterrupted steps exactly" in out
    assert sorted(p.name for p in tmp_path.iterdir()) == ["model.ckpt"]
    saved = files.decode(path.read_bytes())
    params = saved["params"]
    assert list(params) == ["encoder", "head"] and list(params["encoder"]) == ["hidden", "norm"]
    assert params["encoder"]["norm"]._name == "Norm" and params["head"]._name == "Linear"
    assert saved["step"] == 150 and saved["opt"]["step"] == 150
    assert number_after(out, "step 300: loss") < number_after(out, "step 150: loss")


def test_save_and_resume_from_the_command_line(tmp_path, dg):
    result = dg("run", str(EXAMPLES / "save_and_resume.dg"), "ckpt.bin", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "ckpt.bin").is_file() and "saved to ckpt.bin" in result.stdout


def test_ssm_sequence_model_imitates_the_filter():
    out, interp = run_example("ssm_sequence")
    assert number_after(out, "test loss") < 1e-3
    decays = 1 / (1 + np.exp(-interp.lookup("model").decay_logit))
    assert np.min(np.abs(decays - 0.95)) < 0.02          # the slow mode is found


def test_custom_gradients_clip_and_pass_straight_through():
    out, interp = run_example("custom_gradients")
    assert interp.lookup("raw_g") == pytest.approx(10 * np.exp(5.0))
    assert interp.lookup("clipped_g") == 1.0
    np.testing.assert_array_equal(interp.lookup("inner"), [0.5, -1.0, 1.0])
    np.testing.assert_array_equal(interp.lookup("plain"), np.zeros(4))
    w = interp.lookup("w")
    np.testing.assert_array_equal(w - np.mod(w, 0.25), [0.75, -0.5, 1.25, 0.0])


def test_checkpointing_keeps_the_gradient_and_shortens_the_tape():
    out, interp = run_example("checkpointing", keep_tape=True)
    assert "largest difference between the two gradients: 0.0" in out
    interp.run("grad(loss_plain)(ws, x)")
    plain = [n.op for n in interp.last_tape]
    interp.run("grad(loss_ckpt)(ws, x)")
    ckpt = [n.op for n in interp.last_tape]
    assert ckpt.count("Checkpoint") == 24 and "Checkpoint" not in plain
    assert "TanhAct" in plain and "TanhAct" not in ckpt
    assert len(ckpt) < len(plain)


def test_newton_converges_in_a_few_steps_with_the_exact_hessian():
    out, interp = run_example("newton")
    assert "[[802.0, -400.0], [-400.0, 200.0]]" in out
    assert interp.lookup("steps") < 10
    np.testing.assert_allclose(interp.lookup("p"), [1.0, 1.0], atol=1e-9)
    assert np.max(np.abs(interp.lookup("q") - 1.0)) > 0.1   # gradient descent is still far away


def test_gaussian_process_fit_matches_the_likelihood_computed_in_numpy():
    out, interp = run_example("gaussian_process")
    k = interp.lookup("k")
    x, y = interp.lookup("x"), interp.lookup("y")
    length, signal, noise = (float(np.exp(v)) for v in k.vals)
    d = x[:, None] - x[None, :]
    c = signal ** 2 * np.exp(-0.5 * d * d / length ** 2) + noise ** 2 * np.eye(len(x))
    nll = 0.5 * y @ np.linalg.solve(c, y) + 0.5 * np.linalg.slogdet(c)[1] + 0.5 * len(x) * np.log(2 * np.pi)
    assert abs(interp.lookup("final") - nll) < 1e-10
    assert interp.lookup("final") < interp.lookup("start") - 10.0
    assert "noise 0.1" in out


def test_the_markov_chains_rates_maximise_the_likelihood_computed_in_numpy():
    out, interp = run_example("markov_chain")
    counts, t, rates = interp.lookup("counts"), interp.lookup("t"), interp.lookup("rates")
    assert counts.sum() == 3000 and np.all(counts.sum(axis=1) == 1000)

    def nll(r):     # expm by numpy's eigendecomposition (the cycle's eigenvalues are complex)
        q = np.array([[-r[0], r[0], 0.0], [0.0, -r[1], r[1]], [r[2], 0.0, -r[2]]])
        w, v = np.linalg.eig(t * q)
        return -np.sum(counts * np.log((v @ np.diag(np.exp(w)) @ np.linalg.inv(v)).real))
    best = nll(rates)
    assert interp.lookup("loss") == pytest.approx(best, rel=1e-10)
    for k in range(3):
        for step in (-1e-3, 1e-3):
            moved = rates.copy()
            moved[k] *= np.exp(step)
            assert nll(moved) > best
    errors = interp.lookup("errors")
    assert np.all(np.abs(rates - [0.5, 1.5, 0.8]) < 3.0 * errors) and np.all(errors < 0.1)
    assert out.count("rate ") == 3


def test_robust_regression_maximises_the_likelihoods_computed_in_numpy():
    out, interp = run_example("robust_regression")
    x, y = interp.lookup("x"), interp.lookup("y")
    ls, rb = interp.lookup("ls"), interp.lookup("rb")
    # the normal likelihood's line is the least-squares line, its scale the residuals' rms
    (slope, intercept), *_ = np.linalg.lstsq(np.stack([x, np.ones_like(x)], 1), y, rcond=None)
    assert (ls.vals[0], ls.vals[1]) == (pytest.approx(slope, abs=1e-6), pytest.approx(intercept, abs=1e-6))
    rms = np.sqrt(np.mean((y - slope * x - intercept) ** 2))
    assert np.exp(ls.vals[2]) == pytest.approx(rms, rel=1e-6)

    def t_nll(v):       # Student's t log density, written out with math.lgamma
        s, b, log_scale, log_df = v
        df, scale = np.exp(log_df), np.exp(log_scale)
        z = (y - s * x - b) / scale
        norm = math.lgamma((df + 1) / 2) - math.lgamma(df / 2) - 0.5 * np.log(df * np.pi) - np.log(scale)
        return -np.sum(norm - (df + 1) / 2 * np.log1p(z * z / df))
    best = np.array(rb.vals)
    assert interp.lookup("rb_loss") == pytest.approx(t_nll(best), rel=1e-12)
    for k in range(4):
        for step in (-1e-3, 1e-3):
            moved = best.copy()
            moved[k] += step
            assert t_nll(moved) > t_nll(best)
    assert abs(best[0] - 1.5) < 0.1 and abs(best[1] + 0.5) < 0.1 and abs(ls.vals[1] + 0.5) > 0.3
    assert "Student t:" in out


def test_the_cnn_tells_lines_from_crosses_on_held_out_images():
    out, interp = run_example("cnn")
    assert number_after(out, "test accuracy") >= 0.95
    assert number_after(out, "step 0: loss") > 1.0 > 0.05 > interp.lookup("l")
    assert interp.lookup("test_x").shape == (200, 1, 8, 8)


def test_csv_logistic_regression_reaches_80_percent(tmp_path, dg):
    out, interp = run_example("csv_logistic")
    assert "240 students, 3 features" in out
    assert number_after(out, "test accuracy") >= 0.8
    w_raw = interp.lookup("w_raw")
    assert np.all(w_raw > 0)          # more study, sleep and practice all help, as in the data's model
    result = dg("run", str(EXAMPLES / "csv_logistic.dg"), cwd=tmp_path)   # a different directory
    assert result.returncode == 0, result.stderr
    assert "test accuracy" in result.stdout


def test_the_shipped_csv_is_small_and_well_formed():
    path = EXAMPLES / "data" / "exam_scores.csv"
    assert path.stat().st_size < 10_000
    table = np.loadtxt(path, delimiter=",", skiprows=1)
    assert table.shape == (240, 4) and set(np.unique(table[:, 3])) == {0.0, 1.0}


@pytest.mark.parametrize("name", ML_EXAMPLES)
def test_every_example_is_documented_with_its_command(name):
    doc = (ROOT / "docs" / "examples.md").read_text()
    assert f"dg run examples/{name}.dg" in doc
    assert f"dg run examples/{name}.dg" in (EXAMPLES / f"{name}.dg").read_text()


def test_examples_and_stdlib_pass_dg_check(dg):
    paths = [str(EXAMPLES / f"{name}.dg") for name in ML_EXAMPLES]
    paths += [str(ROOT / "stdlib" / f"{name}.dg") for name in ("nn", "optim", "ode", "stats")]
    result = dg("check", *paths)
    assert result.returncode == 0, result.stderr     # save_and_resume.dg reads argv


def test_per_example_gradients_clip_and_train():
    out, interp = run_example("per_example_gradients")
    assert number_after(out, "training accuracy") > 0.9
    assert number_after(out, "largest") > 1.0      # some examples' gradients are clipped at 1.0
    # the per-example gradients of the trained model, from vmap, against one example at a time
    layers, x, y = interp.lookup("layers"), interp.lookup("x"), interp.lookup("y")
    per = interp.lookup("per_example")(layers, x.reshape(-1, 1, 2), y)
    one = interp.lookup("grad")(interp.lookup("loss"))(layers, x[5].reshape(1, 2), y[5])
    np.testing.assert_allclose(per[0].w[5], one[0].w, rtol=1e-12)


def test_ensemble_members_train_as_they_would_alone():
    out, interp = run_example("ensemble")
    assert number_after(out, "of the ensemble:") >= 0.95
    assert "ends 0.0e+00 away" in out or number_after(out, "trained alone ends") < 1e-9


def test_a_jitted_training_step_is_staged_once_and_takes_the_eager_steps(capsys):
    out = io.StringIO()
    interp = dsl.Interpreter(stdout=out, explain_jit=True)
    interp.run_file(EXAMPLES / "jit_training.dg")
    assert capsys.readouterr().err.count("staging it") == 1     # once for 400 calls
    assert number_after(out.getvalue(), "training accuracy") > 0.95
    jit_loss, eager_loss = (number_after(out.getvalue(), f"{k}: final loss") for k in ("jit", "eager"))
    assert jit_loss == eager_loss < 0.01


def test_two_moons_without_matplotlib_trains_and_says_it_drew_nothing(monkeypatch, tmp_path):
    import builtins
    real = builtins.__import__

    def no_matplotlib(name, *args, **kwargs):
        if name.startswith("matplotlib"):
            raise ImportError("no matplotlib here")
        return real(name, *args, **kwargs)
    monkeypatch.setattr(builtins, "__import__", no_matplotlib)
    out, _ = run_example("two_moons", argv=(str(tmp_path / "loss.png"),))
    assert "test accuracy" in out and "loss curves not drawn: plotting needs matplotlib" in out
    assert not (tmp_path / "loss.png").exists()
