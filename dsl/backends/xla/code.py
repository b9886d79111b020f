"""A staged program compiled by XLA: what jit runs with backend="xla" (reference section 6).

`XlaCode(program)` says at once whether the program can be lowered (`why`: None, or the
reason it stays on the numpy backend). Called with the inputs' values, it runs the program
compiled by XLA (traced on the first call of each input type and shape, then cached by JAX,
and on disk across processes: runtime.py) and gives the output leaves as the numpy backend
would: Python numbers where it gives numbers, numpy arrays for tensors. It gives None where
the call's results are not vouched for: a guard failed (the program went another way), or a
value was one numpy refuses. The caller then runs the numpy backend's code for that call,
which fails the same guard (jit stages again) or reports the error as dg always does.
"""

import numpy as np

from ...core.stage import is_array_kind
from . import disk, runtime
from .lower import Lowering, NotLowerable, from_device, loop_iterations, lower_steps, unlowerable
from .residuals import hoist


class XlaCode:
    """One program on XLA (see the module docstring)."""

    __slots__ = ("program", "why", "iterations", "_fn", "_split_fn", "_convert")

    def __init__(self, program):
        self.program = program
        self.why = unlowerable(program)
        # the loop iterations of one call, which count as steps of the run's limits (XLA cannot be
        # stopped partway: jit runs a call that would pass the limits' next look on numpy)
        self.iterations = loop_iterations(program) if self.why is None else 0
        self._fn = None
        self._split_fn = None   # under several processes, a sharded call's: its results replicated
        kinds = program.kinds
        self._convert = [from_device(kinds[r]) if r >= 0 else None for r in program.out_refs]

    def __call__(self, values, split=None):
        """The output leaves on these inputs, or None (see the module docstring). A program found
        not lowerable when first traced sets `why` and gives None from then on. `split`: per
        input, the axis it is split along over every device, or None (shard)."""
        if self.why is not None:
            return None
        with runtime.x64():
            try:
                if split is not None:
                    values = runtime.place(values, split)
                try:
                    outs, ok = self._outs(values, split)
                except Exception as exc:    # XLA refused dg's compiler options: compiled again without them
                    if not runtime.refused(exc):
                        raise
                    self._fn = self._split_fn = None
                    outs, ok = self._outs(values, split)
            except NotLowerable as exc:
                self.why = str(exc)
                return None
            except OverflowError:       # an int argument past int64: numpy's run computes it exactly
                return None
        return outs if ok else None

    def _outs(self, values, split):
        """(output leaves, all flags hold) of the compiled program, compiled on first use, its
        tensors and numbers converted as the numpy backend holds them (call below); a sharded
        call's values already placed on the devices."""
        if split is None:
            if self._fn is None:
                self._fn = self._jitted()
            return self._fn(*values)
        if self._split_fn is None:
            self._split_fn = self._jitted(runtime.processes() > 1, keep=False)
        return self._split_fn(*values)

    def _jitted(self, everywhere=False, keep=True):
        """The program as a jax.jit function of its inputs: call(*values) -> (output leaves, all
        flags hold). The flag, every float result and the small float64 tensors travel back as
        one float64 vector (a read from the device per value cost more than the arithmetic of a
        small program: 5 us each on the CPU). With `everywhere`, every result is whole on every
        device (each process reads its own). With `keep`, the compiled program is kept on disk
        by dg's key (a sharded call's depends on its inputs' placement, which the key does not
        hold: JAX's cache keeps it)."""
        jx = runtime.load()
        jax, jnp = jx.jax, jx.np
        program = self.program
        refs, kinds = program.out_refs, program.kinds
        packed, small, apart = _packing([kinds[r] if r >= 0 else None for r in refs])
        nfloats = 1 + sum(packed)
        # an int input a guard holds to one value (a loop's length, a shape) is that value in the
        # compiled program, not an input handed over on every call: compared here instead
        fixed = _pinned(program) if keep else {}
        passed = [i for i in range(len(program.inputs)) if i not in fixed]

        def run(*values):       # traced only where no compiled program is read back from disk
            if fixed:
                given = iter(values)
                values = [fixed[i] if i in fixed else next(given) for i in range(len(program.inputs))]
            lowering = Lowering(jx)
            # what reverse loops would compute again, read from their forward loops
            outs = lower_steps(lowering, hoist(program), list(values))
            numbers = [lowering.ok().astype(np.float64)] + [o for o, p in zip(outs, packed) if p]
            parts = [jnp.stack(numbers)] + [jnp.ravel(o) for o, t in zip(outs, small) if t]
            vector = jnp.concatenate(parts) if len(parts) > 1 else parts[0]
            return vector, tuple(o for o, a in zip(outs, apart) if a)
        options = runtime.compiler_options()
        if everywhere:
            compiled = jax.jit(run, out_shardings=runtime.replicated(), compiler_options=options)
        else:
            compiled = jax.jit(run, compiler_options=options)
        # what a call runs: the executable itself once _kept has found or made it
        target = [_kept(jax, compiled, program, lambda exe: target.__setitem__(0, exe)) if keep else compiled]
        asarray, copy, convert, consts = np.asarray, np.array, self._convert, program.out_consts
        staging = runtime.staging([kinds[program.inputs[i]] for i in passed]) if keep else None
        # off the CPU each read waits for its own copy to the host: all of them start at once
        early = jax.default_backend() != "cpu" and any(apart)
        pinned = tuple(fixed.items())

        def call(*values):
            if pinned:
                for i, v in pinned:
                    if type(values[i]) is not int or values[i] != v:
                        return None, False      # the guard fails: numpy's code says so and jit stages again
                values = [values[i] for i in passed]
            staged = None if staging is None else staging.take(values)
            if staged is not None:
                values = staged
            try:
                numbers, others = target[0](*values)
                if early:
                    for v in (numbers, *others):
                        v.copy_to_host_async()
                host = asarray(numbers)
                if not host[0]:
                    return None, False
                floats, others = iter(host[1:nfloats].tolist()), iter(others)
                # tensors copied out before the staging buffers (which XLA may hand back) are reused
                return [next(floats) if p else copy(host[t[0]:t[1]]).reshape(t[2]) if t else f(next(others)) if a
                        else c for p, t, a, f, c in zip(packed, small, apart, convert, consts)], True
            finally:
                if staged is not None:
                    staging.release()
        return call


# float64 tensors of at most this many entries in all come back in the vector of the float
# results: one read from the device in place of one per tensor (a gradient of a small program),
# where larger ones would cost more to copy into it than a read of their own
PACKED_ENTRIES = 4096


def _packing(kinds):
    """How each output of these kinds (None: a constant) comes back: (packed: a float in the
    vector after the flag, small: a tensor's (start, stop, shape) in that vector or None,
    apart: a value of its own)."""
    packed = [k == "float" for k in kinds]
    start = 1 + sum(packed)
    small, room = [], PACKED_ENTRIES
    for k in kinds:
        n = int(np.prod(k[3], dtype=np.int64)) if is_array_kind(k) and np.dtype(k[4]) == np.float64 else None
        if n is not None and n <= room:
            small.append((start, start + n, tuple(k[3])))
            start += n
            room -= n
        else:
            small.append(None)
    apart = [k is not None and not p and t is None for k, p, t in zip(kinds, packed, small)]
    return packed, small, apart


def _pinned(program):
    """{input position: value} of the int inputs a guard of the program holds to one int."""
    position = {slot: i for i, slot in enumerate(program.inputs) if program.kinds[slot] == "int"}
    found = {}
    for kind, op, refs, consts, kw, span, out in program.guards:
        if refs and refs[0] in position and type(consts[0]) is int:
            found[position[refs[0]]] = consts[0]
    return found


def _kept(jax, jitted, program, settle):
    """`jitted` as dg calls it the first time: the executable kept on disk for this program and
    these input types (disk.py) where there is one, else `jitted` compiled and kept; `settle`
    hands that executable to the caller for every later call."""
    found = []

    def call(*values):
        if found:
            return found[0](*values)
        folder = runtime.cache_folder()
        name = disk.key(program, values, jax) if folder else None
        exe = disk.load(folder, name) if name else None
        if exe is not None:
            try:
                # waited for here: XLA reports a failed run when its results are read
                out = jax.block_until_ready(exe(*values))
            except Exception:       # a file that loads but does not run: compiled again
                exe = None
            else:
                found.append(exe)
                settle(exe)
                return out
        if name:
            exe = disk.compile_to_keep(jitted.lower(*values))
            if exe is not None:
                disk.save(folder, name, exe)
        found.append(exe or jitted)
        settle(found[0])
        return found[0](*values)
    return call
