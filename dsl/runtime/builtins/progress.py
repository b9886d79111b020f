"""progress(iterable, label=""): a progress bar while a loop runs, drawn by tqdm.

The bar (label, percentage and bar when the length is known, count, rate and time left) goes to
standard error when it is a terminal, and in place below the cell in a notebook (the kernel sets
`interp.progress_live`); elsewhere (a pipe, a log file, a test) progress writes nothing, so logs
stay clean. tqdm redraws at most ten times a second, and `print` inside the loop clears the bar
first and draws it again after (`around_print`), so output never lands on the bar's line.
tqdm is imported on the first call only: `dg run` of a program without a bar does not load it.
"""

import sys

from ...core.tape import raw
from ...core.values import type_name
from ...errors import error
from ..targets import iterate

REDRAW_SECONDS = 0.1


def around_print(write, out):
    """Call write() with live bars cleared first and redrawn after, when any are on screen."""
    tqdm_module = sys.modules.get("tqdm")
    if tqdm_module is None or not getattr(tqdm_module.tqdm, "_instances", None):
        return write()
    with tqdm_module.tqdm.external_write_mode(file=out):
        return write()


def make(interp):
    """progress, drawing where the interpreter's session shows progress."""

    def progress(iterable, label=""):
        """progress(iterable, label=""): the iterable's items, reporting progress as they go by."""
        text = raw(label)
        if type(text) is not str:
            raise error("type", f"progress's label must be a string, got {type_name(text)}")
        items = iterate(iterable, None)
        stream = sys.stderr
        live = getattr(interp, "progress_live", False) or _is_terminal(stream)
        return Progress(items, _length(items), text, stream, live)

    return {"progress": progress}


def _length(items):
    """The number of items, when it is known in advance."""
    try:
        return len(items)
    except TypeError:
        return None


class Progress:
    """An iterator that passes items through and moves a tqdm bar as they go by."""

    dg_iterable = True
    bar = None          # what close() sees if __init__ did not finish

    def __init__(self, items, total, label, stream, live):
        """Wrap an iterable; a live bar is drawn at once."""
        from tqdm import tqdm      # optional dependency
        self.items = iter(items)
        self.bar = tqdm(total=total, desc=label or None, file=stream, disable=not live,
                        mininterval=REDRAW_SECONDS, leave=True, dynamic_ncols=True)

    def __iter__(self):
        """The iterator itself (one pass)."""
        return self

    def __next__(self):
        """The next item; the bar counts it."""
        try:
            item = next(self.items)
        except StopIteration:
            self.close()
            raise
        self.bar.update(1)
        return item

    def close(self):
        """Draw the final state and end the bar's line (tqdm does this once)."""
        if self.bar is not None:
            try:
                self.bar.close()
            except (OSError, ValueError):
                pass

    def __del__(self):
        """End the bar's line when a loop left by `break` or an error drops the iterator."""
        self.close()


def _is_terminal(stream):
    """Whether the stream is an interactive terminal."""
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError, OSError):
        return False
