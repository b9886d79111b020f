"""JAX, loaded on first use: the XLA backend's compiler and runtime (an optional extra).

dg never asks JAX for a derivative: the programs handed to it are dg's staged programs, with
dg's own reverse and forward passes already in them. JAX only traces them into XLA and runs
them. Its 64-bit mode is a process-wide flag in JAX; dg switches it on only around its own
tracing and calls (`x64()`), so a host program that embeds dg keeps the JAX it configured.
"""

import os
from types import SimpleNamespace

import numpy as np

from ...errors import error
from .staging import Staging, large_inputs, reads_in_place

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
        import jax.experimental     # optional, as jax above (io_callback: effects on the host)
    except ImportError:
        raise error("value", "the xla backend needs JAX: install the extra with pip install 'dg-lang[xla]' "
                             "(or pip install jax)") from None
    _use_persistent_cache(jax)
    _dispatch_inline(jax)
    _join_processes(jax)
    _loaded["jax"] = SimpleNamespace(jax=jax, np=jnp, lax=jax.lax, nn=jax.nn, linalg=jax.scipy.linalg,
                                     special=jax.scipy.special, sharding=jax.sharding, weak=_weak_maker())
    return _loaded["jax"]


def _weak_maker():
    """weak(value, dtype): a number the program computed as a weakly typed value of that type,
    as numpy takes a Python number (NEP 50): `m / c` keeps a float32 `m` float32 where `c` is a
    float, on XLA as on numpy. JAX's public casts make strongly typed values, which promote
    float32 tensors to float64; the private cast JAX itself uses for Python numbers keeps them
    weak. Where a JAX lacks it, numbers stay strong (float32 programs then compute in float64)."""
    try:
        from jax._src.lax.lax import _convert_element_type     # optional, as jax (a private name)
    except ImportError:
        return lambda value, dtype: value.astype(dtype)
    return lambda value, dtype: _convert_element_type(value, np.dtype(dtype), weak_type=True)


def _dispatch_inline(jax):
    """XLA's CPU programs run on the calling thread: dg reads every result as soon as its call
    returns, so JAX's asynchronous dispatch gains nothing and hands each call to another thread
    and back (a small program's call took 2-3x as long). Unless the host program started JAX's
    backends before dg did: then its choice stands. JAX does not read this flag from the
    environment; dg reads JAX_CPU_ENABLE_ASYNC_DISPATCH ("1"/"true" keeps JAX's asynchronous
    dispatch, "0"/"false" turns it off)."""
    wanted = os.environ.get("JAX_CPU_ENABLE_ASYNC_DISPATCH", "").strip().lower()
    try:
        from jax._src import xla_bridge     # optional, as jax (a private name: where it is missing, nothing changes)
        if xla_bridge._backends:
            return
        jax.config.update("jax_cpu_enable_async_dispatch", wanted in ("1", "true", "yes", "on"))
    except (ImportError, AttributeError):
        pass


def _join_processes(jax):
    """Under `dg run --processes N` (dsl/processes.py sets these variables), join the other
    processes through JAX's coordinator, so that XLA sees every process's devices; CPUs talk
    over gloo (GPUs use NCCL by themselves)."""
    n = int(os.environ.get("DG_NUM_PROCESSES", "1"))
    if n < 2:
        return
    jax.config.update("jax_cpu_collectives_implementation", "gloo")
    jax.distributed.initialize(coordinator_address=os.environ["DG_COORDINATOR"], num_processes=n,
                               process_id=int(os.environ["DG_PROCESS_ID"]))


def cache_folder():
    """The folder compiled programs are kept in (DG_XLA_CACHE, else the user's cache folder), made
    where missing; None where it cannot be."""
    if "folder" not in _loaded:
        folder = os.environ.get("DG_XLA_CACHE") or os.path.join(
            os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache"), "dg", "xla")
        try:
            os.makedirs(folder, exist_ok=True)
        except OSError:
            folder = None
        _loaded["folder"] = folder
    return _loaded["folder"]


def _use_persistent_cache(jax):
    """XLA's compiled programs kept on disk, so that a second process does not compile them
    again: in `cache_folder()`; unless the host program set a folder for JAX's cache itself."""
    config = jax.config
    folder = cache_folder()
    if getattr(config, "jax_compilation_cache_dir", None) or folder is None:
        return
    try:
        config.update("jax_compilation_cache_dir", folder)
        # every program: dg's are small, and their compilation is what a new process would repeat
        config.update("jax_persistent_cache_min_compile_time_secs", 0.0)
        config.update("jax_persistent_cache_min_entry_size_bytes", 0)
    except AttributeError:
        pass        # a JAX without the setting: programs compile in each process


def compiler_options():
    """XLA's options for dg's programs. On CPU, XLA's newer fusion emitters recompute a fused
    value once per use: a long chain of elementwise steps that share their operands (what a
    derivative written out over a loop's iterations is) ran in time exponential in the chain's
    length, seconds at five iterations and no end at eight; the classic emitters compute each
    once. Per compilation, so a host program's own JAX is untouched. An XLA that no longer has
    the classic emitters (JAX 0.11) refuses the option at every compilation: the first refusal
    drops it for the rest of the process (`refused`)."""
    if "options" not in _loaded:
        cpu = load().jax.default_backend() == "cpu"
        _loaded["options"] = {"xla_cpu_use_fusion_emitters": False} if cpu else None
    return _loaded["options"]


def refused(exc):
    """Whether `exc` is XLA refusing dg's compiler options; then they are dropped, and the
    program is compiled again without them."""
    if _loaded.get("options") and "No such compile option" in str(exc):
        _loaded["options"] = None
        return True
    return False


def staging(kinds):
    """The input staging (staging.py) of a new program whose inputs have these staged kinds, or
    None where it has no large input or XLA copies inputs anyway."""
    positions = large_inputs(kinds)
    if not positions:
        return None
    if "in_place" not in _loaded:
        jx = load()
        _loaded["in_place"] = jx.jax.default_backend() == "cpu" and reads_in_place(jx.jax)
    return Staging(positions) if _loaded["in_place"] else None


def x64():
    """A context in which JAX computes in float64 where dg does (JAX's default is float32)."""
    return load().jax.enable_x64(True)


def mesh():
    """A one-axis mesh of every device XLA sees (every process's, under --processes)."""
    found = _loaded.get("mesh")
    if found is None:
        jx = load()
        found = _loaded["mesh"] = jx.sharding.Mesh(jx.jax.devices(), ("devices",))
    return found


def place(values, axes):
    """Values for a sharded call: each tensor with an axis split along it over `mesh()`, the
    others as they are (XLA puts them whole on each device); with several processes, every value
    a global array of which each process gives the parts on its own devices (each process runs
    the same program on the same values). Inside `x64()`: a float64 array put on a device
    outside it would become float32."""
    jx = load()
    spec, named, jax = jx.sharding.PartitionSpec, jx.sharding.NamedSharding, jx.jax
    where = [None if a is None else named(mesh(), spec(*([None] * a), "devices")) for a in axes]
    if jax.process_count() == 1:
        return [v if w is None else jax.device_put(v, w) for v, w in zip(values, where)]
    whole = named(mesh(), spec())
    out = []
    for v, w in zip(values, where):
        v = np.asarray(v)
        out.append(jax.make_array_from_callback(v.shape, whole if w is None else w, lambda index, v=v: v[index]))
    return out


def replicated():
    """The sharding of a result every process reads whole (a sharded call's, under --processes)."""
    jx = load()
    return jx.sharding.NamedSharding(mesh(), jx.sharding.PartitionSpec())


def processes():
    """How many processes run the program together (1 unless `dg run --processes N`)."""
    return load().jax.process_count()
