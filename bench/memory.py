"""Benchmark 6: memory. RSS growth over a long training loop, and checkpoint on a deep chain."""

import json
import os
import subprocess
import sys

import numpy as np

from .engines import dg_program
from .mlp import make_data
from .mlp import FULL as MLP_FULL, SMOKE as MLP_SMOKE
from .report import make_row
from .timing import measure, median, rss_bytes, traced_peak

GROWTH_FULL = {"early": 200, "late": 5000}
GROWTH_SMOKE = {"early": 5, "late": 20}
CHAIN_FULL = {"blocks": 10, "layers": 10, "width": 128, "batch": 256, "reps": 5}
CHAIN_SMOKE = {"blocks": 3, "layers": 2, "width": 8, "batch": 4, "reps": 1}
MB = 1024 * 1024


def run_growth(smoke):
    """One row: resident memory after `late` steps minus after `early` steps of benchmark 2's loop."""
    cfg, mlp = (GROWTH_SMOKE, MLP_SMOKE) if smoke else (GROWTH_FULL, MLP_FULL)
    (w1, b1, w2, b2), x, y = make_data(mlp["sizes"], mlp["batch"])
    seen = {}
    losses = []

    def mark(step, loss):
        """Called by the dg loop after each step: keep the loss and, from `early` on, the RSS."""
        losses.append(float(loss))
        if step >= cfg["early"]:
            seen[step] = rss_bytes()
        return None

    train = dg_program("mlp").lookup("train")
    final = float(train(w1, b1, w2, b2, x, y, 0.05, cfg["late"], mark))
    if not (np.isfinite(final) and final < losses[0]):
        raise AssertionError(f"memory: training did not lower the loss ({losses[0]} -> {final})")
    growth = (seen[cfg["late"]] - seen[cfg["early"]]) / MB
    highest = (max(seen.values()) - seen[cfg["early"]]) / MB
    return [make_row("memory growth (training loop)", "MB", growth,
                     {f"RSS at step {cfg['early']}": seen[cfg["early"]] / MB}, None, None, "<= 5 MB growth",
                     None if smoke else growth <= 5,
                     f"RSS after step {cfg['late']} minus after step {cfg['early']} of a dg SGD loop "
                     f"over benchmark 2's step (at most {highest:.1f} MB above step {cfg['early']} in between); "
                     f"loss from {losses[0]:.3f} to {final:.3f}")]


def chain_data(cfg):
    """Weights (a tuple of blocks, each a tuple of matrices) and an input for the deep chain."""
    rng = np.random.default_rng(0)
    w = cfg["width"]
    params = tuple(tuple(rng.standard_normal((w, w)) / np.sqrt(w) for _ in range(cfg["layers"]))
                   for _ in range(cfg["blocks"]))
    return params, rng.standard_normal((cfg["batch"], w))


def chain_peak(mode, smoke):
    """In this process: the traced peak bytes of one gradient of the chain (mode: plain or ckpt)."""
    cfg = CHAIN_SMOKE if smoke else CHAIN_FULL
    params, x = chain_data(cfg)
    fn = dg_program("chain").lookup(f"grad_{mode}")
    fn(params, x)                                   # warm-up outside the trace
    return {"peak_bytes": traced_peak(lambda: fn(params, x))}


def peak_in_child(mode, smoke):
    """The peak of one chain gradient, measured in a fresh process so runs don't share memory."""
    cmd = [sys.executable, "-m", "bench.worker", "chain_peak", "--mode", mode] + (["--smoke"] if smoke else [])
    done = subprocess.run(cmd, capture_output=True, text=True, env=os.environ.copy())
    if done.returncode != 0:
        raise RuntimeError(f"chain_peak {mode} failed: {done.stderr[-800:]}")
    return json.loads(done.stdout.strip().splitlines()[-1].split("BENCH-JSON:", 1)[1])["peak_bytes"]


def run_checkpoint(smoke):
    """Two rows: how much checkpoint cuts the chain's peak memory, and what it costs in time."""
    cfg = CHAIN_SMOKE if smoke else CHAIN_FULL
    params, x = chain_data(cfg)
    interp = dg_program("chain")
    plain, ckpt = interp.lookup("grad_plain"), interp.lookup("grad_ckpt")
    gp, gc_ = plain(params, x), ckpt(params, x)
    for bp, bc in zip(gp, gc_):
        for a, b in zip(bp, bc):
            if not np.allclose(a, b, rtol=1e-9, atol=1e-14):
                raise AssertionError("checkpoint: the checkpointed gradient differs from the plain one")
    times = measure({"plain": lambda: plain(params, x), "ckpt": lambda: ckpt(params, x)}, cfg["reps"])
    t_plain, t_ckpt = median(times["plain"]), median(times["ckpt"])
    peak_plain, peak_ckpt = peak_in_child("plain", smoke), peak_in_child("ckpt", smoke)
    cut = peak_plain / peak_ckpt
    slow = t_ckpt / t_plain
    depth = cfg["blocks"] * cfg["layers"]
    shape = (f"{depth} tanh layers of width {cfg['width']}, batch {cfg['batch']}, "
             f"checkpoint around each block of {cfg['layers']}")
    return [make_row("checkpoint peak memory", "MB", peak_ckpt / MB, {"no checkpoint": peak_plain / MB},
                     1 / cut, "no checkpoint", "<= 0.5x (a 2x cut)", None if smoke else cut >= 2,
                     f"{shape}; peak traced by tracemalloc (numpy buffers and Python objects) in a fresh "
                     f"process; peak cut {cut:.2f}x"),
            make_row("checkpoint time", "ms/grad", t_ckpt * 1e3, {"no checkpoint": t_plain * 1e3}, slow,
                     "no checkpoint", "<= 1.6x", None if smoke else slow <= 1.6)]
