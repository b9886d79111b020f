"""JAX, loaded on first use: the XLA backend's compiler and runtime (an optional extra).

dg never asks JAX for a derivative: the programs handed to it are dg's staged programs, with
dg's own reverse and forward passes already in them. JAX only traces them into XLA and runs
them. Its 64-bit mode is a process-wide flag in JAX; dg switches it on only around its own
tracing and calls (`x64()`), so a host program that embeds dg keeps the JAX it configured.
"""

import os
from types import SimpleNamespace

from ...errors import error

_loaded = {}        # what one import of JAX gives; the same for every interpreter of the process


def available():
    """Whether JAX can be imported (the xla extra is installed)."""
    try:
        load()
    except Exception:
        return False
    return True


def load():
    """JAX's modules the backend uses (jax, np: jax.numpy, lax, nn, linalg: jax.scipy.linalg,
    special: jax.scipy.special), importing JAX once; a dg error naming the extra where it is
    missing."""
    if "jax" in _loaded:
        return _loaded["jax"]
    try:
        import jax      # optional: only the XLA backend needs it, and it takes a second to import
        import jax.nn   # optional, as jax above
        import jax.numpy as jnp     # optional, as jax above
        import jax.scipy.linalg     # optional, as jax above
        import jax.scipy.special    # optional, as jax above
        import jax.sharding         # optional, as jax above
    except ImportError:
        raise error("value", "the xla backend needs JAX: install the extra with pip install 'dg-lang[xla]' "
                             "(or pip install jax)") from None
    _use_persistent_cache(jax)
    _loaded["jax"] = SimpleNamespace(jax=jax, np=jnp, lax=jax.lax, nn=jax.nn, linalg=jax.scipy.linalg,
                                     special=jax.scipy.special, sharding=jax.sharding)
    return _loaded["jax"]


def _use_persistent_cache(jax):
    """XLA's compiled programs kept on disk, so that a second process does not compile them
    again: in DG_XLA_CACHE, else in the user's cache folder; unless one was already set."""
    config = jax.config
    if getattr(config, "jax_compilation_cache_dir", None):
        return
    folder = os.environ.get("DG_XLA_CACHE") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache"), "dg", "xla")
    try:
        os.makedirs(folder, exist_ok=True)
        config.update("jax_compilation_cache_dir", folder)
        # every program: dg's are small, and their compilation is what a new process would repeat
        config.update("jax_persistent_cache_min_compile_time_secs", 0.0)
        config.update("jax_persistent_cache_min_entry_size_bytes", 0)
    except (OSError, AttributeError):
        pass        # a read-only home: programs compile in each process, nothing else changes


def x64():
    """A context in which JAX computes in float64 where dg does (JAX's default is float32)."""
    return load().jax.enable_x64(True)


def place(values, axes):
    """Values for a sharded call: each tensor with an axis split along it over a mesh of every
    device XLA sees, the others as they are (XLA puts them whole on each device). Inside `x64()`:
    a float64 array put on a device outside it would become float32."""
    jx = load()
    mesh = _loaded.get("mesh")
    if mesh is None:
        mesh = _loaded["mesh"] = jx.sharding.Mesh(jx.jax.devices(), ("devices",))
    spec, named = jx.sharding.PartitionSpec, jx.sharding.NamedSharding
    return [v if a is None else jx.jax.device_put(v, named(mesh, spec(*([None] * a), "devices")))
            for v, a in zip(values, axes)]
