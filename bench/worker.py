"""One benchmark in a fresh process: `python -m bench.worker NAME [--smoke]` prints its rows as JSON."""

import argparse
import json
import sys


def benchmarks():
    """Worker names -> functions(smoke) returning rows (imported lazily: each process loads what it needs)."""
    from . import (ball, loops, memory, mlp, parsing, scalar, science, startup, stencil, third, training,
                   trajectory, transforms, xla)
    return {"scalar": scalar.run, "mlp": mlp.run, "startup": startup.run, "parsing": parsing.run,
            "memory": memory.run_growth, "checkpoint": memory.run_checkpoint,
            "projectile": loops.run_projectile, "rnn": loops.run_rnn, "ball": ball.run,
            "transforms": transforms.run, "third": third.run, "trajectory": trajectory.run, "stencil": stencil.run,
            "training": training.run, "science": science.run, "xla": xla.run}


def main(argv=None):
    """Run one benchmark and print `BENCH-JSON:` and its result on the last line."""
    ap = argparse.ArgumentParser(prog="python -m bench.worker")
    ap.add_argument("name")
    ap.add_argument("--smoke", action="store_true")
    ap.add_argument("--mode", default="plain", choices=("plain", "ckpt"))
    args = ap.parse_args(argv)
    if args.name == "chain_peak":
        from .memory import chain_peak
        result = chain_peak(args.mode, args.smoke)
    else:
        result = benchmarks()[args.name](args.smoke)
    sys.stdout.flush()
    print("BENCH-JSON:" + json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
