"""GradBench's jax tool timed to the end of its work, its own code unchanged:

    python -m bench.gradbench.waited PATH/TO/gradbench/tools/jax/run.py

The jax tool stops its timer when a jitted call returns, and JAX returns before XLA has done
the work (asynchronous dispatch, on CPU too): its times are then partly dispatch, and runs queue
behind each other. Here GradBench's timing wrappers (gradbench.wrap) are wrapped so that each
timed call waits for its result (`jax.block_until_ready`, as JAX's documentation says to time),
the way dg's and pytorch's calls return only when their results are there.

And in float64, as dg and GradBench's golden tool compute: four of the tool's modules (lse, llsq,
gmm, kmeans) turn JAX's 64-bit mode on, its ode module does not, and JAX then computes in
float32 whatever float64 inputs it is given. The flag is process-wide; turned on before the
tool's modules load, it changes only ode's."""

import runpy
import sys
from pathlib import Path


def waiting(jax, fn):
    """fn, returning only once its results are computed."""
    def waited(*args, **kwargs):
        return jax.block_until_ready(fn(*args, **kwargs))
    return waited


def wrap_timing(jax, wrap):
    """Make the decorators of gradbench.wrap time a function up to its results being ready."""
    for name in ("function", "multiple_runs"):
        original = getattr(wrap, name)

        def decorator(*args, _original=original, **kwargs):
            decorate = _original(*args, **kwargs)
            return lambda fn: decorate(waiting(jax, fn))
        setattr(wrap, name, decorator)


def prepare(jax, wrap):
    """Timed calls that wait for their results, in float64 (see the module docstring)."""
    jax.config.update("jax_enable_x64", True)
    wrap_timing(jax, wrap)


def main(argv=None):
    """Run the tool's run.py as its main program, its timed calls waiting for their results."""
    argv = sys.argv[1:] if argv is None else argv
    import jax
    from gradbench import wrap
    prepare(jax, wrap)
    sys.argv = list(argv)
    sys.path[0] = str(Path(argv[0]).resolve().parent)     # as `python run.py` has it: the tool imports its modules
    runpy.run_path(argv[0], run_name="__main__")
    return 0


if __name__ == "__main__":
    sys.exit(main())
