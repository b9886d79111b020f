"""A Scan's history kept as a log of what each iteration changed (dsl/core/primitives/scan.py).

A Scan keeps the carry each iteration started from, for its reverse rule to run the iteration
again. A carry that holds a tensor the loop writes one row of per iteration (a trajectory,
`y[i] = step(y[i - 1])`) is a new tensor each time: stacked whole, the history is the loop's
length times the tensor, its length squared (a 10,000-step trajectory: 800 MB). The log keeps
the tensor's last value and, per iteration, the entries that changed and what they held before,
as an undo log does; the pullback walks the history backwards, undoing one iteration per row.
A tensor whose entries mostly change each iteration is kept whole per iteration, as before.

`StateLog` is what the loop appends each iteration's starting carry to; `LoggedRows` is one
leaf's history read back as the stacked tensor it stands for: by row (cheap walked backwards in
time, as a pullback walks it), or whole (`numpy.asarray`). A Scan keeps a log only where its
pullback's plain run is the history's one reader (scan._only_staged): the rules of a trace
check a tensor's type."""

import numpy as np

# a tensor leaf of at least this many entries is logged; a smaller one costs less kept whole
MIN_ENTRIES = 256


class StateLog:
    """The carries appended one per iteration (a tuple of leaves each), read back as one
    stacked column per leaf (`columns`). A sequence to the loop that appends (len)."""

    __slots__ = ("n", "logged", "plain", "last", "deltas", "flipped")

    def __init__(self):
        self.n = 0
        self.logged = None
        self.flipped = False

    def __len__(self):
        return self.n

    def append(self, row):
        """Keep one iteration's starting carry."""
        if self.logged is None:
            self.logged = [type(v) is np.ndarray and v.size >= MIN_ENTRIES for v in row]
            self.plain = [[] for _ in row]
            self.last = [None] * len(row)
            self.deltas = [[] for _ in row]
        for j, v in enumerate(row):
            if self.logged[j]:
                if self.last[j] is not None:
                    self.deltas[j].append(_delta(self.last[j], v))
                self.last[j] = v
            else:
                self.plain[j].append(v)
        self.n += 1

    def reverse(self):
        """Read the rows the other way round (a loop run over its items backwards)."""
        self.flipped = not self.flipped

    def columns(self, read, stacked):
        """One stacked value per leaf, None where not `read`: a logged leaf's LoggedRows, another's
        `stacked(values in row order, j)`."""
        out = []
        for j, r in enumerate(read):
            if not r:
                out.append(None)
            elif self.logged is not None and self.logged[j]:
                out.append(LoggedRows(self.last[j], self.deltas[j], self.flipped))
            else:
                values = [] if self.logged is None else self.plain[j]
                out.append(stacked(values[::-1] if self.flipped else values, j))
        return out


def _delta(before, after):
    """How to get `before` back from `after`: None (the same tensor), (positions, their values in
    `before`) where few entries changed, else `before` whole. Entries compare bit by bit, so that
    a NaN or a negative zero comes back as it was."""
    if after is before:
        return None
    if after.shape != before.shape or after.dtype != before.dtype:
        return before
    a, b = _bits(before), _bits(after)
    changed = a != b if a.ndim == 1 else (a != b).any(axis=1)
    where = np.flatnonzero(changed)
    if 3 * len(where) > before.size:
        return before
    return where, before.reshape(-1)[where]


def _bits(x):
    """A tensor's entries as unsigned ints of their width (rows of bytes for wider ones)."""
    flat = np.ascontiguousarray(x).reshape(-1)
    size = flat.dtype.itemsize
    if size in (1, 2, 4, 8):
        return flat.view(f"u{size}")
    return flat.view(np.uint8).reshape(flat.size, size)


class LoggedRows:
    """The stacked history of one tensor leaf: row k the tensor as iteration k began (iteration
    n - 1 - k where `flipped`). A row is the last value with later iterations' changes undone;
    walking rows backwards in time each costs the entries one iteration changed, and a step
    forwards in time starts again from the last value. Rows given out are copies."""

    __slots__ = ("last", "deltas", "flipped", "start", "stop", "cursor")

    def __init__(self, last, deltas, flipped, start=0, stop=None, cursor=None):
        self.last = last
        self.deltas = deltas
        self.flipped = flipped
        self.start = start
        self.stop = len(deltas) + 1 if stop is None else stop
        # [time, the tensor at that time], shared by the views of one log: a loop run in chunks
        # reads each chunk from where the last one stopped
        self.cursor = [None, None] if cursor is None else cursor

    # -- what a stacked tensor shows
    @property
    def shape(self):
        return (len(self), *self.last.shape)

    @property
    def ndim(self):
        return self.last.ndim + 1

    @property
    def dtype(self):
        return self.last.dtype

    @property
    def size(self):
        return len(self) * self.last.size

    def __len__(self):
        return self.stop - self.start

    def __array__(self, dtype=None, copy=None):
        whole = np.stack(list(self)) if len(self) else np.zeros(self.shape, self.dtype)
        return whole if dtype is None else whole.astype(dtype)

    def __iter__(self):
        for k in range(len(self)):
            yield self._row(k)

    def __getitem__(self, key):
        if type(key) is slice:
            start, stop, step = key.indices(len(self))
            if step == 1:
                return self._view(self.flipped, *self._times(start, max(stop, start)))
            if step == -1 and start == len(self) - 1 and stop == -1:
                return self._view(not self.flipped, *self._times(0, len(self)))
            return np.asarray(self)[key]
        k = int(key)
        if k < 0:
            k += len(self)
        if not 0 <= k < len(self):
            raise IndexError("history index out of range")
        return self._row(k)

    # -- rows
    def _view(self, flipped, start, stop):
        """The rows of times start to stop, read backwards in time where `flipped`."""
        return LoggedRows(self.last, self.deltas, flipped, start, stop, self.cursor)

    def _times(self, a, b):
        """Rows a to b of this view as a range of times (start, stop) of the whole log."""
        if self.flipped:
            return self.stop - b, self.stop - a
        return self.start + a, self.start + b

    def _row(self, k):
        """Row k, a copy."""
        t = self.stop - 1 - k if self.flipped else self.start + k
        time, state = self.cursor
        if time is None or t > time:
            time, state = len(self.deltas), self.last.copy()
        while time > t:
            time -= 1
            delta = self.deltas[time]
            if type(delta) is tuple:
                where, values = delta
                state.reshape(-1)[where] = values
            elif delta is not None:
                state = delta.copy()
        self.cursor[:] = time, state
        return state.copy()


__all__ = ["StateLog", "LoggedRows", "MIN_ENTRIES"]
