"""A Jupyter kernel for dg, on ipykernel (docs/notebooks.md).

    python -m dsl.kernel install [--user | --sys-prefix | --prefix DIR]   register the "dg" kernel
    python -m dsl.kernel -f CONNECTION_FILE                                what Jupyter runs

A notebook's cells run in one REPL session (dsl/repl.py), so state, `:commands` and echoes
behave as in `dg repl`. What a notebook adds: values show as rich output (a tensor with its
shape, as a table when it is small), `:tape` also draws the tape (SVG from Graphviz's `dot`
when it is installed), `plot` shows its picture below the cell, `progress` bars update in
place, Tab completes and Shift-Tab shows a name's documentation. A dg error shows in dg's
format, with the caret and no Python traceback; an interrupt stops the cell with one line.
"""

import io
import json
import os
import shutil
import subprocess
import sys
import tempfile

from ipykernel.kernelbase import Kernel

from . import __version__
from .base.cycles import give_back_memory
from .core.printing import show
from .core.values import type_name
from .errors import DgError
from .frontend.parser import is_complete
from .highlight import paint_error
from .repl import _resolve, Repl, complete, describe
from .runtime.builtins.help import describe as documentation
from .runtime.interpreter import Interpreter
from .runtime.tape_view import tape_dot
import html
import base64

NAME = "dg"
SMALL_TABLE = 400       # tensors of at most this many entries (1-d or 2-d) also show as an HTML table


# ---------------------------------------------------------------- rich values
def rich(value):
    """The display data of a value: text/plain as the REPL echoes it, plus HTML for a small tensor."""
    text = show(value, nested=True)
    data = {"text/plain": text}
    if type_name(value) == "tensor" and value.ndim in (1, 2) and value.size <= SMALL_TABLE:
        data["text/html"] = tensor_html(value)
    return data


def tensor_html(t):
    """A small tensor as an HTML table under a caption with its shape."""
    rows = t.reshape(1, -1) if t.ndim == 1 else t
    cells = "".join("<tr>" + "".join(f"<td>{html.escape(show(v.item(), nested=True))}</td>" for v in row) + "</tr>"
                    for row in rows)
    shape = "(" + ", ".join(map(str, t.shape)) + ("," if t.ndim == 1 else "") + ")"
    return (f"<table><caption style='text-align:left'>tensor {shape}"
            f"{' bool' if t.dtype.kind == 'b' else ''}</caption>{cells}</table>")


def dot_svg(dot_text):
    """The SVG Graphviz draws for a DOT text, or None when `dot` is not installed or fails."""
    program = shutil.which("dot")
    if program is None:
        return None
    try:
        done = subprocess.run([program, "-Tsvg"], input=dot_text.encode(), capture_output=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout.decode("utf-8", "replace") if done.returncode == 0 else None


def name_at(code, cursor):
    """The dotted name around the cursor (for Shift-Tab), or ''."""
    start = cursor
    while start > 0 and (code[start - 1].isalnum() or code[start - 1] in "_."):
        start -= 1
    end = cursor
    while end < len(code) and (code[end].isalnum() or code[end] == "_"):
        end += 1
    if start == end and start > 0 and code[start - 1] == "(":     # just after `name(`: the called name
        return name_at(code, start - 1)
    return code[start:end].strip(".")


# ---------------------------------------------------------------- the kernel
class DgKernel(Kernel):
    """The dg kernel: one REPL session, with notebook output."""

    implementation = "dg"
    implementation_version = __version__
    language = "dg"
    language_version = __version__
    language_info = {"name": "dg", "mimetype": "text/x-dg-lang", "file_extension": ".dg",
                     "pygments_lexer": "dgl", "codemirror_mode": "python"}
    banner = f"dg {__version__}: a differentiable programming language (:help for commands)"
    help_links = [{"text": "dg language reference", "url": "https://github.com/dg-lang/dg/blob/main/docs/reference.md"}]

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.interp = None
        self.repl = None
        self.stdout, self.stderr = _Stream(self, "stdout"), _Stream(self, "stderr")
        self._fresh()

    def _fresh(self):
        """A new interpreter and session, wired to this notebook's output."""
        self.interp = Interpreter(keep_tape=True)
        self.interp.display = lambda png: self.show({"image/png": _b64(png), "text/plain": "<plot>"})
        self.interp.progress_live = True
        self.repl = Repl(self.interp, out=self.stdout, err=self.stderr, catch_interrupts=False)
        self.repl.echo = self.echo
        self.repl.complain = self.complain
        self.failed = None

    # -- output ---------------------------------------------------------------
    def _flush(self):
        """Send the text printed so far before what comes next."""
        self.stdout.flush()
        self.stderr.flush()

    def show(self, data):
        """Send display data (after flushing the text written so far, to keep the order)."""
        self._flush()
        self.send_response(self.iopub_socket, "display_data", {"data": data, "metadata": {}})

    def echo(self, value):
        """An expression statement's value, as the cell's rich output."""
        if value is not None:
            self.show(rich(value))

    def complain(self, text):
        """An error: shown in dg's format, coloured, as the cell's error (no Python traceback)."""
        self._flush()
        self.repl.errors += 1
        self.failed = text
        self.send_response(self.iopub_socket, "error", {
            "ename": "DgError", "evalue": text.split("\n", 1)[0],
            "traceback": paint_error(text, self.interp.builtins).split("\n")})

    def tape_picture(self):
        """The last tape as SVG when Graphviz is there (the text of :tape is shown anyway)."""
        nodes = self.interp.last_tape
        if nodes:
            svg = dot_svg(tape_dot(nodes))
            if svg is not None:
                self.show({"image/svg+xml": svg, "text/plain": f"<tape of {len(nodes)} nodes>"})

    # -- requests -------------------------------------------------------------
    async def do_execute(self, code, silent, store_history=True, user_expressions=None, allow_stdin=False,
                         *, cell_meta=None, cell_id=None):
        """Run a cell: dg code and `:commands`, as the REPL runs an input."""
        if not isinstance(code, str):
            return _bad_request(f"the code of an execute_request must be a string, got {type(code).__name__}",
                                execution_count=self.execution_count)
        self.failed = None
        stopped = False
        saved = sys.stdout, sys.stderr
        sys.stdout, sys.stderr = self.stdout, self.stderr     # progress bars and warnings too
        try:
            for part in split_commands(code):
                self.repl.execute(part)
                if self.failed is not None:
                    break
                if part.strip() == ":tape":
                    self.tape_picture()
                self.repl.done = False      # :quit has nothing to leave in a notebook: the session goes on
        except KeyboardInterrupt:
            self.complain("interrupted: the cell was stopped (the session and its names are kept)")
            stopped = True
        except DgError as exc:              # raised outside the REPL's own handlers
            self.complain(str(exc.settle()))
        finally:
            self._flush()
            sys.stdout, sys.stderr = saved
        if stopped:     # outside the handler, whose traceback held what the stopped cell had built
            give_back_memory()
        if self.failed is not None:
            return {"status": "error", "execution_count": self.execution_count, "ename": "DgError",
                    "evalue": self.failed.split("\n", 1)[0], "traceback": []}
        return {"status": "ok", "execution_count": self.execution_count, "payload": [], "user_expressions": {}}

    async def do_complete(self, code, cursor_pos):
        """Tab: builtins, names, module members, struct fields and map keys at the cursor."""
        cursor_pos = _cursor(code, cursor_pos)
        if cursor_pos is None:
            return _bad_request("complete_request needs code as a string and cursor_pos as an int")
        found = complete(self.interp, code[:cursor_pos])
        start = cursor_pos + (found[0][1] if found else 0)
        return {"status": "ok", "matches": [text for text, *_ in found], "cursor_start": start,
                "cursor_end": cursor_pos, "metadata": {"_jupyter_types_experimental": [
                    {"text": text, "start": start, "end": cursor_pos, "type": meta}
                    for text, _, _, meta in found]}}

    async def do_inspect(self, code, cursor_pos, detail_level=0, omit_sections=()):
        """Shift-Tab: the documentation of the name at the cursor."""
        cursor_pos = _cursor(code, cursor_pos)
        if cursor_pos is None:
            return _bad_request("inspect_request needs code as a string and cursor_pos as an int")
        name = name_at(code, cursor_pos)
        value = None
        if name:
            value = _resolve(self.interp, name)
            if value is None and "." not in name:
                value = self.interp.builtins.get(name)
        if value is None:
            return {"status": "ok", "found": False, "data": {}, "metadata": {}}
        text = documentation(value, self.interp.builtins)
        if detail_level and type_name(value) not in ("function",):
            text += "\n" + describe(value)
        return {"status": "ok", "found": True, "data": {"text/plain": text}, "metadata": {}}

    async def do_is_complete(self, code):
        """Whether the console should run the input or wait for more lines."""
        if not isinstance(code, str):
            return {"status": "invalid", "indent": ""}
        return {"status": "complete" if is_complete(code) else "incomplete", "indent": "    "}

    async def do_shutdown(self, restart):
        """Nothing to clean up: the interpreter goes with the process."""
        return {"status": "ok", "restart": restart}


def _cursor(code, cursor_pos):
    """A request's cursor within its code, or None for a malformed request. A client that counts
    UTF-16 units (JupyterLab, on a cell with an emoji) may send a cursor past the end: the end."""
    if not isinstance(code, str) or type(cursor_pos) is not int:
        return None
    return min(max(cursor_pos, 0), len(code))


def _bad_request(why, **more):
    """The reply to a request dg cannot serve: an error reply, not silence."""
    return {"status": "error", "ename": "BadRequest", "evalue": why, "traceback": [], **more}


def split_commands(code):
    """A cell's parts: each `:command` line on its own, the dg code between them as one input."""
    parts, pending = [], []
    for line in code.split("\n"):
        if line.strip().startswith(":") and not pending_open(pending):
            if "".join(pending).strip():
                parts.append("\n".join(pending))
            pending = []
            parts.append(line)
        else:
            pending.append(line)
    if "\n".join(pending).strip():
        parts.append("\n".join(pending))
    return parts


def pending_open(lines):
    """Whether dg code collected so far is unfinished (a `:` line then belongs to it)."""
    text = "\n".join(lines)
    return bool(text.strip()) and not is_complete(text)


class _Stream(io.TextIOBase):
    """A cell's standard output or error: text sent to the notebook as `stream` messages of the
    cell being run (ipykernel's own streams send from a thread, and can miss the cell)."""

    def __init__(self, kernel, name):
        self.kernel, self.name, self.pending = kernel, name, []

    def writable(self):
        """It is written to."""
        return True

    def write(self, text):
        """Keep the text; a complete line goes out at once, so a long cell's prints show as it runs."""
        self.pending.append(text)
        if "\n" in text:
            self.flush()
        return len(text)

    def flush(self):
        """Send what was written since the last flush."""
        if self.pending:
            text, self.pending = "".join(self.pending), []
            self.kernel.send_response(self.kernel.iopub_socket, "stream", {"name": self.name, "text": text})


def _b64(data):
    """Base64 text of bytes, as Jupyter's image data is sent."""
    return base64.b64encode(data).decode("ascii")


# ---------------------------------------------------------------- installing and launching
def kernel_json():
    """The kernel spec: how Jupyter starts this kernel with this Python."""
    return {"argv": [sys.executable, "-m", "dsl.kernel", "-f", "{connection_file}"],
            "display_name": "dg", "language": "dg", "interrupt_mode": "signal",
            "metadata": {"debugger": False}}


def install(args):
    """`python -m dsl.kernel install [--user | --sys-prefix | --prefix DIR]`; returns the exit code."""
    from jupyter_client.kernelspec import KernelSpecManager     # start-up: only `install` needs it
    user, prefix = False, None
    rest = list(args)
    while rest:
        arg = rest.pop(0)
        if arg == "--user":
            user = True
        elif arg == "--sys-prefix":
            prefix = sys.prefix
        elif arg == "--prefix" and rest:
            prefix = rest.pop(0)
        else:
            sys.stderr.write(f"dsl.kernel install: unknown option {arg}\n"
                             "usage: python -m dsl.kernel install [--user | --sys-prefix | --prefix DIR]\n")
            return 2
    with tempfile.TemporaryDirectory() as tmp:
        with open(os.path.join(tmp, "kernel.json"), "w", encoding="utf-8") as fh:
            json.dump(kernel_json(), fh, indent=1)
        where = KernelSpecManager().install_kernel_spec(tmp, NAME, user=user, prefix=prefix)
    print(f"installed the dg kernel in {where}")
    return 0


def main(argv=None):
    """`install`, or run the kernel (Jupyter passes -f CONNECTION_FILE)."""
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["install"]:
        return install(argv[1:])
    from ipykernel.kernelapp import IPKernelApp     # start-up: only a running kernel needs the app
    IPKernelApp.launch_instance(argv=argv, kernel_class=DgKernel)
    return 0


if __name__ == "__main__":
    sys.exit(main())
