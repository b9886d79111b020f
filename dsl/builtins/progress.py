"""progress(iterable, label=""): a progress bar on standard error while a loop runs.

The bar (count, percentage when the length is known, rate and ETA) is drawn
with carriage returns only when standard error is a terminal, at most ten
times a second; otherwise progress is silent, so logs and pipes stay clean.
It is plain text rather than prompt_toolkit's ProgressBar, which would take
over the terminal while the loop's own `print` output is written.
"""

import sys
import time
import weakref

from ..autodiff.tape import raw
from ..errors import error
from ..statements import iterate
from ..values import type_name

REDRAW_SECONDS = 0.1
BAR_WIDTH = 24
# Bars on screen now; `print` erases and redraws them around its output. Weak,
# so that a loop left by `break` drops its bar and __del__ ends the bar's line.
LIVE = weakref.WeakSet()


def around_print(write):
    """Call write() with the live bars erased first and redrawn after, so output never lands on a bar."""
    bars = list(LIVE)
    for bar in bars:
        bar.erase()
    try:
        return write()
    finally:
        for bar in bars:
            bar.draw()


def progress(iterable, label=""):
    """progress(iterable, label=""): the iterable's items, reporting progress on a terminal."""
    text = raw(label)
    if type(text) is not str:
        raise error("type", f"progress's label must be a string, got {type_name(text)}")
    items = iterate(iterable, None)
    return Progress(items, _length(items), text, sys.stderr)


def _length(items):
    """The number of items, when it is known in advance."""
    try:
        return len(items)
    except TypeError:
        return None


class Progress:
    """An iterator that passes items through and redraws a bar as they go by."""

    dg_iterable = True
    live = closed = False       # what __del__ sees if __init__ did not finish

    def __init__(self, items, total, label, stream):
        """Wrap an iterable; draw the empty bar at once on a terminal."""
        self.items = iter(items)
        self.total = total
        self.label = label
        self.stream = stream
        self.live = _is_terminal(stream)
        self.count = 0
        self.started = time.monotonic()
        self.drawn_at = None
        self.closed = False
        if self.live:
            LIVE.add(self)
            self.draw()

    def __iter__(self):
        """The iterator itself (one pass)."""
        return self

    def __next__(self):
        """The next item, redrawing the bar when a tenth of a second has passed."""
        try:
            item = next(self.items)
        except StopIteration:
            self.close()
            raise
        if self.count and self.live:
            now = time.monotonic()
            if now - self.drawn_at >= REDRAW_SECONDS:
                self.draw(now)
        self.count += 1
        return item

    def draw(self, now=None):
        """Write the bar over the current line."""
        now = time.monotonic() if now is None else now
        self.drawn_at = now
        self.stream.write("\r" + render(self.label, self.count, self.total, now - self.started) + "\x1b[K")
        self.stream.flush()

    def erase(self):
        """Clear the bar's line (before other output is written)."""
        self.stream.write("\r\x1b[K")
        self.stream.flush()

    def close(self):
        """Draw the final state and end the line (once), so later output starts afresh."""
        if self.closed:
            return
        self.closed = True
        if LIVE is not None:            # None if this runs while Python shuts down
            LIVE.discard(self)
        if self.live:
            try:
                self.draw()
                self.stream.write("\n")
                self.stream.flush()
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


def render(label, count, total, elapsed):
    """One line of progress: label, bar and percentage (when the total is known), count, rate, ETA."""
    rate = count / elapsed if elapsed > 0 else 0.0
    parts = [label] if label else []
    if total:
        done = min(count / total, 1.0)
        filled = int(done * BAR_WIDTH)
        parts.append("[" + "#" * filled + "." * (BAR_WIDTH - filled) + f"] {done * 100:3.0f}%")
        parts.append(f"{count}/{total}")
    else:
        parts.append(f"{count}")
    parts.append(f"{_rate(rate)} it/s")
    if total and rate > 0 and count < total:
        parts.append(f"ETA {_clock((total - count) / rate)}")
    else:
        parts.append(f"{_clock(elapsed)}")
    return "  ".join(parts)


def _rate(r):
    """A rate with sensible precision."""
    return f"{r:.1f}" if r < 100 else f"{r:.0f}"


def _clock(seconds):
    """Seconds as m:ss or h:mm:ss."""
    s = int(seconds + 0.5)
    h, rest = divmod(s, 3600)
    m, s = divmod(rest, 60)
    return f"{h}:{m:02d}:{s:02d}" if h else f"{m}:{s:02d}"


BUILTINS = {"progress": progress}
