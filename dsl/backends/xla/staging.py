"""Inputs handed to XLA on the CPU without a copy of their own per call.

XLA's CPU runtime reads a numpy array in place only where its memory starts on a 64-byte
boundary; numpy's allocator gives 16, so XLA copies every large input of every call into fresh
memory (whose pages the system then has to map). `Staging` keeps one aligned buffer per large
input of a compiled program and copies the input into it: the same bytes moved, into memory
that is already mapped and already in the cache (an MLP step's two 1.6 MB inputs: 1.0 ms of CPU
time per call became 0.4-0.6 ms). Buffers are reused only once a call's results are read (dg
calls XLA synchronously on the CPU), and a call made while one is in flight (from a host
callback inside it, or another thread) passes its inputs as they are.

A buffer keeps the array it was last filled from, and an input that is that same array is not
copied again: the data of a training loop, passed to every step, is copied once. dg's tensors
are values (a write into one, `x[i] = v`, makes a copy; Python code receives copies), and what
writes into an array in place (elision.py, the generated code's temporaries) does so only where
the reference count shows that nothing else holds it, which the kept reference prevents.
"""

import threading

import numpy as np

from ...core.stage import is_array_kind

ALIGN = 64              # XLA:CPU's minimum alignment for reading a buffer in place
MIN_BYTES = 1 << 16     # smaller inputs cost less to copy than to think about


def aligned_empty(shape, dtype):
    """An uninitialised C-contiguous array whose data starts on an ALIGN-byte boundary."""
    dtype = np.dtype(dtype)
    size = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
    raw = np.empty(size + ALIGN, np.uint8)
    start = (-raw.ctypes.data) % ALIGN
    return raw[start:start + size].view(dtype).reshape(shape)


def reads_in_place(jax):
    """Whether this XLA reads an aligned numpy array without copying it (asked once, of the
    default device: a GPU always copies to its own memory, and a future XLA may want more)."""
    probe = aligned_empty((MIN_BYTES,), np.uint8)     # (bytes: no float64 to float32 outside x64)
    probe[...] = 0
    try:
        return jax.device_put(probe).unsafe_buffer_pointer() == probe.ctypes.data
    except Exception:       # a JAX without these calls: inputs go as they are
        return False


def large_inputs(kinds):
    """The positions of the inputs, by their staged kinds, that are numeric tensors of at least
    MIN_BYTES (a compiled program's inputs keep their shapes and dtypes from call to call)."""
    return tuple(i for i, kind in enumerate(kinds)
                 if is_array_kind(kind) and np.dtype(kind[4]).kind in "biuf"
                 and int(np.prod(kind[3], dtype=np.int64)) * np.dtype(kind[4]).itemsize >= MIN_BYTES)


class Staging:
    """A compiled program's aligned input buffers (see the module docstring), for the inputs at
    `positions` (large_inputs)."""

    __slots__ = ("positions", "buffers", "sources", "busy")

    def __init__(self, positions):
        self.positions = positions
        self.buffers = {}       # input position -> its buffer
        self.sources = {}       # input position -> the array its buffer holds a copy of
        self.busy = threading.Lock()        # held while a call reads the buffers

    def take(self, values):
        """The values to call XLA with: each large array (at `positions`, whose shape and dtype
        the program fixes) that is not aligned copied into its position's buffer (unless it is
        the array the buffer holds already); None (the values as they are) where the buffers are
        in use. A call that got buffers gives them back with `release`."""
        if not self.busy.acquire(blocking=False):
            return None
        out = list(values)
        try:
            for i in self.positions:
                v = values[i]
                if v.ctypes.data % ALIGN:
                    buf = self.buffers.get(i)
                    if buf is None:
                        buf = self.buffers[i] = aligned_empty(v.shape, v.dtype)
                    if self.sources.get(i) is not v:
                        self.sources.pop(i, None)       # (a copy cut short holds no array's bytes)
                        np.copyto(buf, v)
                        self.sources[i] = v
                    out[i] = buf
        except BaseException:
            self.busy.release()
            raise
        return out

    def release(self):
        """The call's results are read (copied out): the buffers may be written again."""
        self.busy.release()
