"""`dg run --processes N`: the same program run by N processes on this machine, which join
through JAX's coordinator so that `shard` splits its batch over every process's devices
(docs/xla.md). The first process's output is the command's; the others' error output is
shown prefixed with their number when they fail."""

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


def launch(n, args):
    """Run `dg ARGS` in n processes joined by a coordinator on the loopback; the exit code (the
    first process's, or the first failure's)."""
    env = dict(os.environ, DG_NUM_PROCESSES=str(n), DG_COORDINATOR=f"127.0.0.1:{free_port()}")
    command = [sys.executable, "-m", "dsl", *without_processes(args)]
    procs = [subprocess.Popen(command, env=dict(env, DG_PROCESS_ID=str(i)), stdout=subprocess.PIPE if i == 0
                              else subprocess.DEVNULL, stderr=None if i == 0 else subprocess.PIPE, text=i > 0)
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
