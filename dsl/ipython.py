"""The IPython/Jupyter extension: `%load_ext dsl.ipython`.

    %%dg --in x,y --out params       run a cell of dg; pull notebook variables in, push dg names out
    %dg mean(w)                      run one line; its value comes back as a Python value

Every cell and line shares one interpreter per IPython shell. Values cross
with dsl.runtime.embed's conversions (numpy arrays both ways, dicts <-> maps, ...).
A dg error fails the cell and shows in the dg format (reference section 7)
without a Python traceback, and so does an interrupted cell (one line): IPython
asks exceptions for `_render_traceback_`, which `DgError` and `Interrupted` provide.
For a notebook written wholly in dg, the dg kernel (dsl/kernel.py) is the better fit.
"""

from IPython.core.magic import Magics, line_cell_magic, magics_class

from .errors import DgError, error
from .runtime.embed import check_name, to_dg, to_py
from .runtime.interpreter import Interpreter

USAGE = """\
%dg [OPTIONS] CODE     run one line of dg; returns the value of its last expression
%%dg [OPTIONS]         run the cell as dg; returns the value of its last expression
options:
  -i, --in NAMES       copy these notebook variables (comma-separated) into dg first
  -o, --out NAMES      copy these dg names into the notebook afterwards
  --reset              start a fresh interpreter first"""


class Interrupted(KeyboardInterrupt):
    """An interrupted dg cell: IPython shows its one line instead of a Python traceback."""

    def _render_traceback_(self):
        """What IPython shows for it."""
        return ["interrupted: the dg cell was stopped (its names so far are kept)"]


class OptionError(Exception):
    """A magic's options could not be read."""


def parse_options(line):
    """Split a magic line into ({"in": [...], "out": [...], "reset": bool}, the rest as dg code).

    Options come first; `--` ends them, and anything else that is not an
    option (such as `-x + 1`) starts the code.
    """
    opts = {"in": [], "out": [], "reset": False}
    rest = line.strip()
    while rest.startswith("-"):
        head, _, tail = rest.partition(" ")
        head, eq, value = head.partition("=")
        if head == "--":
            return opts, tail.strip()
        if head in ("-i", "--in", "-o", "--out"):
            names = value if eq else ""
            if not eq:
                names, _, tail = tail.strip().partition(" ")
            if not names:
                raise OptionError(f"{head} needs names, e.g. {head} x,y")
            opts["in" if head in ("-i", "--in") else "out"] += [n for n in names.split(",") if n]
        elif head == "--reset" and not eq:
            opts["reset"] = True
        elif head.startswith("--"):
            raise OptionError(f"unknown option {head}\n{USAGE}")
        else:
            break
        rest = tail.strip()
    return opts, rest


@magics_class
class DgMagics(Magics):
    """The `%dg` line magic and `%%dg` cell magic, sharing one interpreter."""

    def __init__(self, shell):
        super().__init__(shell)
        self.interp = Interpreter()
        self.cells = 0

    @line_cell_magic
    def dg(self, line, cell=None):
        """Run dg code (the rest of the line, or the cell); see `%dg --help`."""
        if line.strip() in ("-h", "--help"):
            print(USAGE)
            return None
        try:
            opts, code = parse_options(line)
        except OptionError as exc:
            from IPython.core.error import UsageError      # optional dependency (the notebook extra)
            raise UsageError(str(exc)) from None
        if cell is not None:
            if code:
                from IPython.core.error import UsageError      # optional dependency (the notebook extra)
                raise UsageError(f"%%dg takes only options on its first line, not {code!r}")
            code = cell
        return self._run(opts, code, "cell" if cell is not None else "line")

    def _run(self, opts, code, kind):
        """Pull inputs, run the code, push outputs; a DgError shows in the dg format."""
        try:
            if opts["reset"]:
                self.interp = Interpreter()
            for name in opts["in"]:
                if name not in self.shell.user_ns:
                    raise error("name", f"the notebook has no variable '{name}' to pass in with --in")
                self.interp.bind(check_name(name), to_dg(self.shell.user_ns[name], self.interp))
            value = None
            if code.strip():
                self.cells += 1
                value = self.interp.run(code, f"<{kind}-{self.cells}>")
            for name in opts["out"]:
                self.shell.user_ns[name] = to_py(self.interp.lookup(check_name(name)), self.interp)
            return to_py(value, self.interp)
        except DgError as exc:
            raise exc.settle() from None
        except KeyboardInterrupt:
            raise Interrupted() from None


def interpreter(shell=None):
    """The interpreter the magics of `shell` (default: the running IPython) share."""
    if shell is None:
        from IPython import get_ipython     # optional dependency (the notebook extra)
        shell = get_ipython()
    return shell.magics_manager.registry["DgMagics"].interp


def load_ipython_extension(shell):
    """`%load_ext dsl.ipython`: register the `%dg` and `%%dg` magics."""
    shell.register_magics(DgMagics)
