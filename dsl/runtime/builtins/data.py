"""Data builtins: load_csv, batches, one_hot, train_test_split (reference section 9).

Shuffling draws from the interpreter's seeded generator, so a seeded program
sees the same batches and the same split on every run.
"""

import csv
import io
import itertools
import math
from array import array

import numpy as np

from ...core import ops
from ...core.ops.core import check_size, ndarray, to_float
from ...core.printing import show
from ...core.stage import perform
from ...core.tape import Box, raw
from ...core.values import a_type_name, type_name
from ...errors import DgError, error
from .arrays import flag
from .files import read_limited, read_path


def make(interp):
    """The data builtins, bound to one interpreter (for its random generator)."""

    def batches(x, y, size, shuffle=True):
        """batches(x, y, size, shuffle=true): (xb, yb) pairs of up to `size` rows, shuffled each call."""
        n = _rows(x, "batches' x")
        if _rows(y, "batches' y") != n:
            raise error("shape", f"batches needs x and y with the same number of rows, got "
                                 f"{n} and {_rows(y, 'y')}")
        count = _positive_int(size, "batches' size")
        order = interp.rng.permutation(n) if flag(shuffle, "shuffle") else np.arange(n)
        return Batches(x, y, order, count)

    def train_test_split(x, y, fraction):
        """train_test_split(x, y, fraction): (x_train, x_test, y_train, y_test); fraction is the test share."""
        n = _rows(x, "train_test_split's x")
        if _rows(y, "train_test_split's y") != n:
            raise error("shape", f"train_test_split needs x and y with the same number of rows, got "
                                 f"{n} and {_rows(y, 'y')}")
        f = raw(fraction)
        if type(f) not in (int, float) or not 0 < f < 1:
            # a non-number is a wrong argument type (reference 7); a number outside (0, 1) a bad value
            raise error("value" if type(f) in (int, float) else "type",
                        f"train_test_split's fraction is the share of rows for testing, "
                        f"a number between 0 and 1 (exclusive), got {_show(f)}")
        # rounded first: 0.07 * 100 is 7.000000000000001, and 8 test rows would surprise
        n_test = math.ceil(round(f * n, 9))
        if n_test >= n:
            raise error("value", f"train_test_split with fraction {f} leaves no training rows out of {n}")
        order = interp.rng.permutation(n)
        test, train = order[:n_test], order[n_test:]
        return _take(x, train), _take(x, test), _take(y, train), _take(y, test)

    def load_csv_(path, header=True, columns=False):
        # reading a file is an effect: jit performs it again on every call
        return perform(interp.staging, load_csv, (path,), {"header": header, "columns": columns,
                                                          "poll": interp.limits.poll})

    load_csv_.__name__ = "load_csv"
    load_csv_.__doc__ = load_csv.__doc__
    return {"load_csv": load_csv_, "batches": batches, "one_hot": one_hot,
            "train_test_split": train_test_split}


class Batches:
    """The (xb, yb) pairs of one pass over a data set; a `for` loop walks it once."""

    dg_iterable = True

    def __init__(self, x, y, order, size):
        """Batches of the rows of x and y in `order`, `size` at a time."""
        self.x, self.y, self.order, self.size = x, y, order, size
        self.start = 0

    def __iter__(self):
        """The iterator itself (one pass)."""
        return self

    def __next__(self):
        """The next (xb, yb) pair."""
        if self.start >= len(self.order):
            raise StopIteration
        idx = self.order[self.start:self.start + self.size]
        self.start += self.size
        return _take(self.x, idx), _take(self.y, idx)

    def __len__(self):
        """The number of batches still to come."""
        return max(0, math.ceil((len(self.order) - self.start) / self.size))


def _take(x, idx):
    """The rows of x at positions idx (differentiably when x is recorded)."""
    if type(x) is Box:
        return ops.gather(x, idx.astype(np.float64))
    return raw(x)[idx]


def _rows(x, what):
    """The number of rows (axis 0) of a tensor argument."""
    v = raw(x)
    if type(v) is not ndarray or v.ndim == 0:
        raise error("type", f"{what} must be a tensor with at least one axis, got "
                            + (f"shape {ops.fmt_shape(v.shape)}" if type(v) is ndarray else f"{a_type_name(v)}"))
    return v.shape[0]


def _positive_int(v, what):
    """A positive int argument (int-valued floats accepted)."""
    v = raw(v)
    if type(v) is float and v.is_integer():
        v = int(v)
    if type(v) is not int:
        raise error("type", f"{what} must be an int, got {type_name(v)}")
    if v < 1:
        raise error("value", f"{what} must be at least 1, got {v}")
    return v


def _show(v):
    """A value as dg prints it."""
    return show(v, True)


def one_hot(labels, n):
    """one_hot(labels, n): a tensor of shape shape(labels) + (n,) with 1.0 at each label."""
    count = _positive_int(n, "one_hot's n")
    v = raw(labels)
    if type(v) in (int, float, bool):
        v = np.asarray(to_float(v))
    elif type(v) is tuple:
        v = np.asarray([to_float(i) for i in v], dtype=np.float64) if all(type(i) in (int, float, bool) for i in v) else None
    if type(v) is ndarray and v.dtype.kind == "b":
        v = v.astype(np.float64)        # a bool label (y > 0) is class 0 or 1, as in jax.nn.one_hot
    if type(v) is not ndarray or v.dtype.kind not in "fiu":
        raise error("type", f"one_hot needs labels as an int, a tensor or a tuple of ints, got {type_name(labels)}")
    check_size(v.shape + (count,))
    if not np.all(np.isfinite(v)) or not np.all(v == np.round(v)):
        raise error("value", "one_hot needs whole-number labels")
    bad = (v < 0) | (v >= count)
    if np.any(bad):
        first = float(v[bad].flat[0])
        raise error("index", f"one_hot: the label {_show(first)} is out of range for {count} classes "
                             f"(labels go from 0 to {count - 1})")
    return (v[..., None] == np.arange(count)).astype(np.float64)


def load_csv(path, header=True, columns=False, poll=None):
    """load_csv(path, header=true, columns=false): a 2-d tensor, or a map of column tensors."""
    has_header = flag(header, "load_csv's header")
    as_columns = flag(columns, "load_csv's columns")
    source = read_path(path, "load_csv")
    blob = read_limited(source, "load_csv")
    # rows are read one at a time into a flat array of floats: the memory is the file's and the
    # table's, not a Python string per cell (about 95 times the file)
    text = io.TextIOWrapper(io.BytesIO(blob), encoding="utf-8-sig", newline="")
    reader = ((i, r) for i, r in enumerate(csv.reader(text), 1) if r and any(c.strip() for c in r))
    try:
        names, width, values, count = _read_rows(reader, has_header, source, poll)
    except (UnicodeDecodeError, csv.Error) as exc:
        raise error("value", f"{source} is not a readable CSV file: {exc}") from None
    table = np.frombuffer(values, dtype=np.float64).reshape(count, width) if width else np.empty((count, 0))
    if not as_columns:
        return table.copy()
    keys = names if names is not None else list(range(width))
    return {k: table[:, i].copy() for i, k in enumerate(keys)}


POLL_ROWS = 4096        # rows read between two looks at the interpreter's limits


def _read_rows(reader, has_header, source, poll):
    """(header names or None, width, the numbers as an array('d'), row count) of a CSV reader's
    non-empty rows; `poll()` is called every POLL_ROWS rows (the run's timeout)."""
    names = None
    first = next(reader, None)
    if has_header:
        if first is None:
            raise error("value", f"{source} is empty: there is no header line")
        names = [c.strip() for c in first[1]]
        seen = set()
        for c in names:
            if c in seen:
                raise error("value", f"{source}: the column name {c!r} appears twice in the header")
            seen.add(c)
        first = None
    width = len(names) if names is not None else (len(first[1]) if first is not None else 0)
    values = array("d")
    count = 0
    rows = reader if first is None else itertools.chain((first,), reader)
    for line, cells in rows:
        if len(cells) != width:
            raise error("value", f"{source}, line {line}: {len(cells)} values where "
                                 f"{'the header has' if names is not None else 'the first row has'} {width}")
        try:
            values.extend([float(c) for c in cells])
        except ValueError:
            values.extend(_with_missing(cells, source, line, names))
        count += 1
        if count % POLL_ROWS == 0:
            if poll is not None:
                poll()
            if too_big((count, width)):
                for _ in rows:      # the rest only counted, for the whole table's shape in the error
                    count += 1
                    if count % POLL_ROWS == 0 and poll is not None:
                        poll()
                break
    check_size((count, width))
    return names, width, values, count


def _with_missing(cells, source, line, names):
    """A row's numbers where some field is not one: an empty field is a missing value, nan (as
    numpy's genfromtxt and pandas read it); any other is an error naming its column."""
    bad = next((k for k, cell in enumerate(cells) if cell.strip() and not _is_float(cell)), None)
    if bad is None:
        return [float(cell) if cell.strip() else math.nan for cell in cells]
    col = f"'{names[bad]}'" if names is not None else str(bad + 1)
    raise error("value", f"{source}, line {line}, column {col}: {cells[bad].strip()!r} is not a "
                         "number (load_csv reads numeric tables)",
                hint="an empty field reads as nan, a missing value (isnan(x) finds them)")


def too_big(shape):
    """Whether a tensor of this shape is past the size limit (check_size says why)."""
    try:
        check_size(shape)
    except DgError:
        return True
    return False


def _is_float(cell):
    """Whether float() reads a cell."""
    try:
        float(cell)
    except ValueError:
        return False
    return True
