"""Compiled programs kept on disk under dg's own key, so that a new process neither compiles a
program again nor traces it to find it in JAX's cache.

JAX's persistent cache (runtime.py) saves compilation but not tracing: a new process traces
the program into JAX (a quarter of a second for a 1,000-step loop's gradient) only to compute
the key it looks up. dg knows its program before tracing it, so it keys the compiled
executable by the program itself (its steps, constants, Scan bodies and input types), with
JAX's version, XLA's flags, the devices and dg's own source files, and reads it back in
milliseconds. The folder may be emptied at any time.

A program whose steps hold anything not known to have a faithful text (a host function, an
effect's callback) has no key, and one XLA compiles with a call out of itself (LAPACK's
factorisations) is not kept: such programs are traced, and JAX's cache serves them. Anything wrong with a
saved file (another version, a partial write) is a miss, never an error.
"""

import hashlib
import os
import pickle
from functools import cache

import numpy as np

from ...core import stage as S
from .rules import ON_HOST


class Unkeyable(Exception):
    """A value in a program without a faithful text: the program is not kept by dg."""


def key(program, values, jax):
    """The file name a program compiled for these input values is kept under, or None. dg's
    compiler options are not in it: they follow from JAX's version and the platform, which are
    (an XLA that refuses the CPU option is known only after a first refusal, and a key holding the
    options would then miss in every new process)."""
    h = hashlib.sha256()
    try:
        _program(h, program)
        for v in values:       # an input's type and shape (its value is the call's)
            if type(v) is np.ndarray:
                _value(h, ("in", v.dtype.str, v.shape))
            elif type(v) in (float, int, bool):
                _value(h, ("in", type(v).__name__))
            else:
                raise Unkeyable(type(v).__name__)       # a value placed on devices: its placement counts
    except Unkeyable:
        return None
    devices = jax.devices()
    _value(h, (jax.__version__, devices[0].platform, devices[0].device_kind, len(devices),
               os.environ.get("XLA_FLAGS", ""), _backend_source()))
    return "dg-" + h.hexdigest()[:40]


def load(folder, name):
    """The executable kept under `name`, or None."""
    try:
        from jax.experimental import serialize_executable     # optional: JAX is the xla extra
        with open(os.path.join(folder, name), "rb") as f:
            payload, in_tree, out_tree = pickle.load(f)
        return serialize_executable.deserialize_and_load(payload, in_tree, out_tree)
    except Exception:
        return None


def compile_to_keep(lowered):
    """A lowered program compiled by XLA itself, or None where JAX offers no way to: an
    executable JAX read back from its own persistent cache does not survive being written out
    again (calling it back fails for want of its fused functions), so what dg keeps is compiled
    with JAX's cache out of use for that compilation. JAX decides once per process whether it
    uses its cache (compilation_cache.is_cache_used), so its setting cannot switch it off: the
    decision itself is set aside while this program compiles (a private name: where it is
    missing, the program is not kept)."""
    try:
        from jax._src import compilation_cache as cache     # optional: JAX is the xla extra
        with cache._cache_initialized_mutex:
            saved = cache._cache_checked, cache._cache_used
            cache._cache_checked, cache._cache_used = True, False
    except Exception:
        return None
    try:
        return lowered.compile()
    finally:
        with cache._cache_initialized_mutex:
            cache._cache_checked, cache._cache_used = saved


def save(folder, name, compiled):
    """Keep a compiled executable under `name` (written whole or not at all), unless it calls
    code outside itself (a custom call: LAPACK's factorisations, a callback), whose handlers a
    new process registers only when it lowers such a program: read back first, it crashed."""
    try:
        text = compiled.as_text()
        if "custom-call" in text or "custom_call" in text:
            return
        from jax.experimental import serialize_executable     # optional: JAX is the xla extra
        data = pickle.dumps(serialize_executable.serialize(compiled))
        path = os.path.join(folder, name)
        part = f"{path}.{os.getpid()}.part"
        with open(part, "wb") as f:
            f.write(data)
        os.replace(part, path)
    except Exception:
        pass        # a read-only folder, an executable JAX cannot write: compiled again next time


def _program(h, program):
    """Feed a program's text to the hash: what it computes, not where its steps came from."""
    _value(h, ("program", program.nslots, program.inputs, program.out_refs, program.out_consts, program.kinds))
    for kind, op, refs, consts, kw, span, out in program.steps:
        if op in ON_HOST:
            raise Unkeyable(op)     # a callback into this process
        _value(h, (kind, op, refs, consts, out))
        _value(h, kw)


def _value(h, v):
    """Feed a value's faithful text to the hash (Unkeyable where there is none)."""
    t = type(v)
    if v is None or t in (bool, int, float, str):
        h.update(f"{t.__name__}:{v!r};".encode())
    elif t is np.ndarray:
        h.update(f"array:{v.dtype.str}:{v.shape};".encode())
        h.update(np.ascontiguousarray(v).tobytes())
    elif isinstance(v, np.generic):
        h.update(f"{v.dtype.str}:{v!r};".encode())
    elif t in (tuple, list):
        h.update(f"{t.__name__}{len(v)}(".encode())
        for x in v:
            _value(h, x)
        h.update(b")")
    elif t in (set, frozenset):
        _value(h, ("set", sorted(v, key=repr)))
    elif t is dict:
        _value(h, ("dict", sorted(v.items(), key=lambda kv: repr(kv[0]))))
    elif t in (range, slice):
        _value(h, (t.__name__, v.start, v.stop, v.step))
    elif isinstance(v, np.dtype):
        _value(h, ("dtype", v.str))
    elif hasattr(v, "program") and hasattr(v, "counts") and isinstance(v.program, S.Program):
        _value(h, ("body", v.counts, getattr(v, "exact", None) is None))
        _program(h, v.program)
    else:
        raise Unkeyable(t.__name__)


@cache
def _backend_source():
    """A fingerprint of dg's own source: every module's path, size and modification time, so that
    a changed rule, kernel, plan or primitive's flag is a new key (the lowering reads more than
    its own files). The stat of each file costs a millisecond where hashing their text cost tens,
    and a file touched without a change only costs a compilation."""
    h = hashlib.sha256()
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    for folder, subfolders, files in os.walk(root):
        subfolders.sort()
        for name in sorted(files):
            if name.endswith((".py", ".lark")):
                st = os.stat(os.path.join(folder, name))
                h.update(f"{os.path.relpath(os.path.join(folder, name), root)}:{st.st_size}:{st.st_mtime_ns};".encode())
    return h.hexdigest()
