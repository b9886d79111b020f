"""shard(f, in_axes): f compiled by XLA and run over several devices, here 8 CPU devices that
XLA simulates (XLA_FLAGS=--xla_force_host_platform_device_count=8, set before JAX starts, so
each test runs its program in a new process; JAX_PLATFORMS=cpu, so that a machine with a GPU
simulates them too)."""

import json
import os
import subprocess
import sys
import textwrap

import pytest

pytest.importorskip("jax")
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

STEP = """
import json, numpy as np, dsl
from dsl.backends.xla import runtime
placed = []
place = runtime.place
def counted(values, axes):      # what each sharded call hands XLA
    out = place(values, axes)
    placed.append([len(v.sharding.device_set) if a is not None else None for v, a in zip(out, axes)])
    return out
runtime.place = counted
i = dsl.Interpreter(seed=0)
i.run('''
struct Mlp { w1, b1, w2, b2 }
fn loss(p, x, y) {
    let h = tanh(x @ p.w1 + p.b1)
    return mean((h @ p.w2 + p.b2 - y) ** 2)
}
fn train(p, x, y) {
    let l, g = value_and_grad(loss)(p, x, y)
    return (l, Mlp(p.w1 - 0.1 * g.w1, p.b1 - 0.1 * g.b1, p.w2 - 0.1 * g.w2, p.b2 - 0.1 * g.b2))
}
let one = jit(train)
let split = shard(train, in_axes=(none, 0, 0))
let p = Mlp(randn((5, 16)), zeros((16,)), randn((16, 1)), zeros((1,)))
let x = randn((64, 5))
let y = randn((64, 1))
''')
one, split, p, x, y = (i.lookup(n) for n in ("one", "split", "p", "x", "y"))
out = {"devices": list(i.run("devices()"))}
for step in range(3):       # the first call stages; the next ones run on the 8 devices
    l1, p1 = one(p, x, y)
    l8, p8 = split(p, x, y)
    out.setdefault("loss", []).append([l1, l8])
    out.setdefault("gap", []).append(max(float(np.max(np.abs(getattr(p1, f) - getattr(p8, f))))
                                        for f in ("w1", "b1", "w2", "b2")))
    p = p8
(entries,) = split.call.jitted.entries.values()
out["why"] = entries[0].xla.why
out["placed"] = placed
try:
    split(p, x[:60], y[:60])
    split(p, x[:60], y[:60])
except dsl.DgError as e:
    out["uneven"] = str(e).splitlines()[0]
print(json.dumps(out))
"""


def test_a_training_step_split_over_eight_devices_matches_one_device():
    env = dict(os.environ, XLA_FLAGS="--xla_force_host_platform_device_count=8", JAX_PLATFORMS="cpu")
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(STEP)], capture_output=True, text=True, cwd=ROOT,
                          env=env, timeout=300)
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout.splitlines()[-1])
    assert out["devices"] == [f"cpu:{k}" for k in range(8)]
    assert out["why"] is None
    # two compiled calls, each with x and y split over the 8 devices and the parameters whole
    assert len(out["placed"]) == 2 and all(sorted(p, key=str)[:2] == [8, 8] and p.count(None) == 4
                                           for p in out["placed"])
    for l1, l8 in out["loss"]:
        assert l8 == pytest.approx(l1, rel=1e-12)
    assert max(out["gap"]) < 1e-12
    assert "does not split evenly over 8 devices" in out["uneven"]


def _run_example(*options, devices=None):
    """What examples/xla/sharded_training.dg prints, run by `dg run` with these options."""
    env = dict(os.environ, JAX_PLATFORMS="cpu")
    if devices:
        env["XLA_FLAGS"] = f"--xla_force_host_platform_device_count={devices}"
    done = subprocess.run([sys.executable, "-m", "dsl", "run", *options, "examples/xla/sharded_training.dg"],
                          capture_output=True, text=True, cwd=ROOT, env=env, timeout=300)
    assert done.returncode == 0, done.stderr
    return done.stdout.splitlines()


def test_the_sharded_example_trains_alike_on_one_device_eight_and_two_processes():
    one = _run_example()
    eight = _run_example(devices=8)
    two = _run_example("--processes", "2")
    assert one[-1].endswith("on 1 device(s)") and eight[-1].endswith("on 8 device(s)")
    assert two[-1].endswith("on 2 device(s)")
    # the losses (to 6 digits) and the accuracy are the same; the training learned the rings
    assert one[:-1] == eight[:-1] == two[:-1] and len(one) == 6
    assert one[-1].split(" on ")[0] == eight[-1].split(" on ")[0] == two[-1].split(" on ")[0]
    assert float(one[-1].split()[1]) > 0.95 and float(one[-2].split()[-1]) < 0.1


def test_processes_need_a_file_and_a_count_of_at_least_one():
    for args in (["--processes", "2", "-"], ["--processes", "0", "x.dg"]):
        done = subprocess.run([sys.executable, "-m", "dsl", "run", *args], capture_output=True, text=True,
                              cwd=ROOT, timeout=60, stdin=subprocess.DEVNULL)
        assert done.returncode == 2 and "--processes" in done.stderr


def test_processes_on_a_gpu_machine_take_a_share_of_its_gpus_each_or_all_run_on_the_cpu(monkeypatch, capsys):
    from dsl import processes
    assert processes.device_settings(2, ["0", "1", "2", "3"]) == [{"CUDA_VISIBLE_DEVICES": "0,1"},
                                                                  {"CUDA_VISIBLE_DEVICES": "2,3"}]
    assert processes.device_settings(2, ["4", "6", "7"]) == [{"CUDA_VISIBLE_DEVICES": "4"},
                                                             {"CUDA_VISIBLE_DEVICES": "6"}]
    assert processes.device_settings(2, []) == [{}, {}]
    # NCCL refuses two processes on one GPU: with fewer GPUs than processes, the CPU
    assert processes.device_settings(2, ["0"]) == [{"JAX_PLATFORMS": "cpu"}] * 2
    assert "2 processes and 1 GPU(s): the processes run on the CPU" in capsys.readouterr().err
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "3, 5")
    assert processes.visible_gpus() == ["3", "5"]
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")
    assert processes.visible_gpus() == []
    monkeypatch.setenv("JAX_PLATFORMS", "cpu")
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0,1")
    assert processes.visible_gpus() == []
