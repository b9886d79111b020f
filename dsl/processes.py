"""`dg run --processes N`: the same program run by N processes on this machine, which join
through JAX's coordinator so that `shard` splits its batch over every process's devices
(docs/xla.md). The first process's output is the command's; the others' error output is
shown prefixed with their number when they fail.

On a machine with NVIDIA GPUs each process is given its own share of them (NCCL refuses two
processes on one GPU); with fewer GPUs than processes, the processes run on the CPU."""

import os
import socket
import subprocess
import sys


GLOO_NOTE = b"[Gloo] Rank "     # what CPU collectives print on standard output when they connect


def free_port():
    """A TCP port on the loopback interface that nothing listens on now (the coordinator's)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def without_processes(args):
    """The command line with its --processes option taken out (what each process runs)."""
    out, skip = [], False
    for a in args:
        if skip:
            skip = False
        elif a == "--processes":
            skip = True
        elif not a.startswith("--processes="):
            out.append(a)
    return out


def visible_gpus():
    """The NVIDIA GPUs a process started here may use (CUDA_VISIBLE_DEVICES, else nvidia-smi's
    list), as the ids CUDA_VISIBLE_DEVICES takes; none where JAX is told to stay on the CPU."""
    if os.environ.get("JAX_PLATFORMS", "").strip().lower() == "cpu":
        return []
    if "CUDA_VISIBLE_DEVICES" in os.environ:
        return [d.strip() for d in os.environ["CUDA_VISIBLE_DEVICES"].split(",") if d.strip()]
    try:
        done = subprocess.run(["nvidia-smi", "--query-gpu=index", "--format=csv,noheader"],
                              capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return []
    return done.stdout.split() if done.returncode == 0 else []


def device_settings(n, gpus):
    """The environment each of n processes adds to its own: an equal share of `gpus` each, or,
    with fewer GPUs than processes, the CPU for all (a note says so); nothing without GPUs."""
    if not gpus:
        return [{} for _ in range(n)]
    if len(gpus) < n:
        sys.stderr.write(f"dg: {n} processes and {len(gpus)} GPU(s): the processes run on the CPU\n")
        return [{"JAX_PLATFORMS": "cpu"} for _ in range(n)]
    k = len(gpus) // n
    return [{"CUDA_VISIBLE_DEVICES": ",".join(gpus[i * k:(i + 1) * k])} for i in range(n)]


def launch(n, args):
    """Run `dg ARGS` in n processes joined by a coordinator on the loopback; the exit code (the
    first process's, or the first failure's)."""
    env = dict(os.environ, DG_NUM_PROCESSES=str(n), DG_COORDINATOR=f"127.0.0.1:{free_port()}")
    command = [sys.executable, "-m", "dsl", *without_processes(args)]
    devices = device_settings(n, visible_gpus())
    procs = [subprocess.Popen(command, env=dict(env, DG_PROCESS_ID=str(i), **devices[i]),
                              stdout=subprocess.PIPE if i == 0 else subprocess.DEVNULL,
                              stderr=None if i == 0 else subprocess.PIPE, text=i > 0)
             for i in range(n)]
    out = sys.stdout.buffer
    for line in procs[0].stdout:     # the program's output, without the note gloo prints as processes connect
        if not line.startswith(GLOO_NOTE):
            out.write(line)
            out.flush()
    codes = [procs[0].wait()]
    for i, p in enumerate(procs[1:], 1):
        _, err = p.communicate()
        codes.append(p.returncode)
        if p.returncode:
            sys.stderr.write("".join(f"dg: process {i}: {line}\n" for line in err.splitlines()))
    return next((c for c in codes if c), 0)
