"""plot(ys) / plot(xs, ys, ...): a line plot with matplotlib (the optional `plot` extra).

With `path`, the picture is written there as a PNG (through the file policy, as `save` is);
in a notebook (the dg kernel, or the `%%dg` magic) it is shown below the cell. matplotlib is
imported on the first call only, with its non-interactive Agg backend, so `dg run` neither
pays for it nor opens a window.
"""

import io
import sys

import numpy as np

from ...base import sandbox
from ...core.stage import perform
from ...core.tape import raw
from ...core.values import type_name
from ...errors import error
from .files import write_atomic
from pathlib import Path

EXTRA = "pip install 'dg-lang[plot]'"


def _matplotlib():
    """pyplot on the Agg backend, or the error that names the extra."""
    try:
        import matplotlib      # optional dependency (the plot extra)
        matplotlib.use("Agg", force=True)
        from matplotlib import pyplot      # optional, as above
    except ImportError:
        raise error("import", "plot needs matplotlib, which is not installed",
                    hint=f"install the plot extra: {EXTRA}") from None
    return pyplot


def _series(v, what):
    """A number sequence as a float array (a tensor, or a tuple of numbers)."""
    v = raw(v)
    if type(v) is tuple:
        v = [raw(x) for x in v]
        if not all(type(x) in (int, float, bool) for x in v):
            raise error("type", f"plot: {what} must hold numbers")
    elif type(v) is not np.ndarray:
        raise error("type", f"plot: {what} must be a tensor or a tuple of numbers, got {type_name(v)}")
    a = np.asarray(v, dtype=np.float64)
    if a.ndim not in (1, 2) or a.size == 0:
        raise error("shape", f"plot: {what} must be a non-empty vector (or a matrix, one line per column)")
    return a


def _text(v, what):
    """An optional string option."""
    v = raw(v)
    if v is not None and type(v) is not str:
        raise error("type", f"plot: {what} must be a string, got {type_name(v)}")
    return v


def figure_png(xs, ys, label, title, xlabel, ylabel):
    """The plot as PNG bytes."""
    pyplot = _matplotlib()
    fig, ax = pyplot.subplots(figsize=(6.4, 4.0), dpi=100)
    try:
        lines = ys if ys.ndim == 2 else ys[:, None]
        labels = label if type(label) is tuple else (label,) * lines.shape[1]
        for k in range(lines.shape[1]):
            ax.plot(xs, lines[:, k], linewidth=1.6, label=labels[k] if k < len(labels) else None)
        if any(lab for lab in labels if lab):
            ax.legend(frameon=False)
        ax.set_title(title or "")
        if xlabel:
            ax.set_xlabel(xlabel)
        if ylabel:
            ax.set_ylabel(ylabel)
        ax.grid(True, alpha=0.3)
        for side in ("top", "right"):
            ax.spines[side].set_visible(False)
        fig.tight_layout()
        out = io.BytesIO()
        fig.savefig(out, format="png")
        return out.getvalue()
    finally:
        pyplot.close(fig)


def make(interp):
    """plot, writing where the interpreter's file policy allows and showing in its notebook."""

    def plot(xs, ys=None, label=None, title=None, xlabel=None, ylabel=None, path=None):
        """plot(ys) or plot(xs, ys, label=, title=, xlabel=, ylabel=, path=): a line plot."""
        if ys is None:
            xs, ys = None, xs
        y = _series(ys, "ys")
        x = None if xs is None else _series(xs, "xs")
        if x is not None and (x.ndim != 1 or x.shape[0] != y.shape[0]):
            raise error("shape", f"plot: xs has {x.shape[0] if x.ndim == 1 else 'not one'} entries "
                                 f"but ys has {y.shape[0]} rows")
        lab = raw(label)
        if lab is not None and type(lab) is not str and not (type(lab) is tuple and all(type(t) is str for t in lab)):
            raise error("type", f"plot: label must be a string or a tuple of strings, got {type_name(lab)}")
        xlab = _text(xlabel, "xlabel")
        options = (_text(title, "title"), "step" if xlab is None and x is None else xlab, _text(ylabel, "ylabel"))
        target = _text(path, "path")
        show = getattr(interp, "display", None)
        if target is None and show is None:
            show = nowhere
        return perform(interp.staging, _draw, (x if x is not None else np.arange(y.shape[0]), y, lab, options,
                                               target, show))

    def nowhere(png):
        """Outside a notebook and without a path: say once per interpreter that nothing was shown,
        as matplotlib's non-interactive backend warns for plt.show()."""
        if not getattr(interp, "plot_told", False):
            interp.plot_told = True
            sys.stderr.write("dg: plot drew nothing here (not in a notebook): give path=\"plot.png\" to write "
                             "a PNG file\n")
            sys.stderr.flush()
    nowhere.draws_nothing = True

    def can_plot():
        """can_plot(): whether plot can draw here (matplotlib, the plot extra, is installed)."""
        try:
            import matplotlib  # noqa: F401  (optional dependency: only whether it is there)
        except ImportError:
            return False
        return True

    return {"plot": plot, "can_plot": can_plot}


def _draw(x, y, label, options, target, show):
    """Draw, then write the PNG and show it (an effect: jit repeats it on every call)."""
    if target is None and getattr(show, "draws_nothing", False):
        show(None)          # nowhere to show it: no need for matplotlib either
        return None
    png = figure_png(x, y, label, *options)
    if target is not None:
        path = sandbox.for_writing(Path(target).expanduser())
        try:
            write_atomic(path, png)
        except OSError as exc:
            raise error("value", f"plot: cannot write {path}: {exc.strerror or exc}") from None
    if show is not None:
        show(png)
    return None
