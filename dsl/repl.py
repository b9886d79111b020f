"""The interactive REPL (`dg repl`, or `dg` alone), built on prompt_toolkit.

`Repl` holds a session's state and runs inputs and `:commands`; it knows
nothing of terminals. `make_session` builds the prompt_toolkit session
(highlighting, completion, history, Enter that submits only complete input),
`interact` is the prompt loop, and `run_piped` runs a script of REPL input
when standard input is not a terminal. See docs/repl.md.
"""

import os
import re
import sys
import time
import traceback
from pathlib import Path

import numpy as np
from prompt_toolkit import PromptSession
from prompt_toolkit.auto_suggest import AutoSuggestFromHistory
from prompt_toolkit.completion import Completer, Completion
from prompt_toolkit.filters import Condition
from prompt_toolkit.history import FileHistory, InMemoryHistory
from prompt_toolkit.key_binding import KeyBindings
from prompt_toolkit.lexers import PygmentsLexer

from . import __version__
from .base.cells import UNBOUND
from .base.cycles import give_back_memory
from .base.source_files import read_source
from .core.ops import fmt_shape
from .core.printing import display_tensor, show
from .core.tape import peek
from .core.values import Function, Module, Struct, StructDef, type_name
from .errors import DgError
from .frontend.parser import is_complete
from .frontend.syntax_errors import KEYWORDS
from .highlight import DgLexer, paint_error
from .runtime.builtins.help import describe as documentation
from .runtime.tape_view import format_tape, tape_dot
from prompt_toolkit.application.current import get_app

PROMPT = "dg> "
CONTINUATION = "... "
INDENT = "    "
DEFAULT_HISTORY = "~/.dg_history"

HELP = """\
Type dg statements; Enter runs them once they are complete (Esc Enter adds a line).
Commands:
  :help            this list
  :quit            leave the REPL (also Ctrl-D)
  :reset           forget every name and module: a fresh session
  :vars            the names defined, with their types and shapes
  :type EXPR       the type (and shape) of EXPR's value
  :doc NAME        the documentation of a builtin, function, struct or module (as help(NAME))
  :load FILE       run a .dg file in this session
  :time EXPR       run EXPR (or statements) and say how long it took
  :tape            the tape of the most recent gradient computation (or the recording
                   of the most recent jit or vmap staging)
  :tape dot FILE   write that tape as a Graphviz DOT file
Ctrl-C cancels the input or interrupts a running computation; Ctrl-D leaves."""


# ---------------------------------------------------------------- describing values
def describe(value):
    """A value's type with its shape or size: `tensor (3, 4)`, `map (2 keys)`, `Linear`,
    `struct type Linear { w, b }`, `function dense(layer, x)`."""
    if isinstance(value, StructDef):
        return f"struct type {value.name} {{ {', '.join(value.fields)} }}"
    code = getattr(value, "code", None) if isinstance(value, Function) else None
    if code is not None and getattr(code, "signature", None):
        return f"function {code.signature}"
    t = type_name(value)
    if t == "tensor":
        return f"tensor {fmt_shape(value.shape)}" + (" bool" if value.dtype.kind == "b" else "")
    if t == "map":
        return f"map ({len(value)} key{'s' * (len(value) != 1)})"
    if t == "tuple":
        return f"tuple ({len(value)} element{'s' * (len(value) != 1)})"
    return t


def _duration(seconds):
    """A duration in the unit that reads best."""
    if seconds >= 1:
        return f"{seconds:.3f} s"
    if seconds >= 1e-3:
        return f"{seconds * 1e3:.3f} ms"
    return f"{seconds * 1e6:.1f} µs"


# ---------------------------------------------------------------- the session state
class Repl:
    """One REPL session: the interpreter, how inputs run, and the `:commands`."""

    def __init__(self, interp, out=None, err=None, catch_interrupts=True):
        self.interp = interp
        self._out = out
        self._err = err
        self.catch_interrupts = catch_interrupts
        self.count = 0          # inputs run, for the <repl-N> file names
        self.errors = 0         # inputs that failed
        self.done = False
        self.paint = None       # text -> coloured text, for errors shown on a terminal

    @property
    def out(self):
        """Where echoes and command output go (the current sys.stdout unless given)."""
        return self._out if self._out is not None else sys.stdout

    @property
    def err(self):
        """Where errors go (the current sys.stderr unless given)."""
        return self._err if self._err is not None else sys.stderr

    def say(self, text):
        """Write a line of output."""
        self.out.write(text + "\n")
        self.out.flush()

    def complain(self, text):
        """Write a line of error output and count the failure."""
        self.errors += 1
        self.out.flush()
        self.err.write((self.paint(text) if self.paint is not None else text) + "\n")
        self.err.flush()

    def echo(self, value):
        """Show the value of an expression statement (none is not shown). A tensor whose literal
        fits on a line shows as its literal, as print writes it; a larger one as numpy users read
        one: its shape, then aligned columns to 8 significant digits (print gives every digit)."""
        if value is None:
            return
        text = show(value, nested=True)
        if type(peek(value)) is np.ndarray and ("\n" in text or len(text) > 80 or "..." in text):
            text = display_tensor(value)
        self.say(text)

    # -- running --------------------------------------------------------------
    def execute(self, text):
        """Run one input: a `:command` or dg code."""
        stripped = text.strip()
        if not stripped:
            return
        if stripped.startswith(":"):
            self.command(stripped)
        else:
            self.run_code(text)

    def run_code(self, text, echo=True):
        """Run dg source; echo expression values; report errors. Returns (ok, value)."""
        self.count += 1
        stopped = False
        try:
            value = self.interp.run(text, f"<repl-{self.count}>", echo=self.echo if echo else None)
        except KeyboardInterrupt:
            if not self.catch_interrupts:
                raise
            stopped = True
        except DgError as exc:
            self.complain(str(exc.settle()))
            return False, None
        except Exception as exc:        # a bug in dg itself: say so, keep the session
            self.complain("internal error: dg itself failed; please report this with the input that caused it\n"
                          + "".join(traceback.format_exception(type(exc), exc, exc.__traceback__)).rstrip())
            return False, None
        if stopped:     # outside the handler, whose traceback held what the stopped run had built
            self.complain("interrupted")
            give_back_memory()
            return False, None
        return True, value

    # -- commands -------------------------------------------------------------
    def command(self, line):
        """Run a `:command` line."""
        name, _, arg = line[1:].partition(" ")
        arg = arg.strip()
        handler = COMMANDS.get(name)
        if handler is None:
            self.complain(f"unknown command ':{name}'; :help lists the commands")
            return
        handler(self, arg)

    def cmd_help(self, arg):
        """:help"""
        self.say(HELP)

    def cmd_quit(self, arg):
        """:quit"""
        self.done = True

    def cmd_reset(self, arg):
        """:reset — fresh globals and modules; `argv` is kept."""
        interp = self.interp
        argv = interp.main.cells.get("argv")
        interp.main = Module("__main__", None, {})
        interp.modules.clear()
        interp.loading.clear()
        interp.grad_options.last_tape = None
        if argv is not None and argv.v is not UNBOUND:
            interp.bind("argv", argv.v)
        self.say("the session is reset")

    def cmd_doc(self, arg):
        """:doc NAME"""
        self._show(arg, ":doc NAME", lambda value: documentation(value, self.interp.builtins))

    def cmd_vars(self, arg):
        """:vars"""
        names = self.interp.names()
        if not names:
            self.say("no names are defined")
            return
        width = max(len(n) for n in names)
        for n in names:
            self.say(f"{n.ljust(width)}  {describe(self.interp.main.cells[n].v)}")

    def cmd_type(self, arg):
        """:type EXPR"""
        self._show(arg, ":type EXPR", describe)

    def _show(self, arg, usage, render):
        """Evaluate `arg` and say render(its value), or say how the command is used."""
        if not arg:
            self.complain(f"usage: {usage}")
            return
        ok, value = self.run_code(arg, echo=False)
        if ok:
            self.say(render(value))

    def cmd_load(self, arg):
        """:load FILE"""
        if not arg:
            self.complain("usage: :load FILE")
            return
        path = Path(os.path.expanduser(arg.strip("\"'")))
        try:
            text = read_source(path)
        except (OSError, UnicodeDecodeError) as exc:
            self.complain(f"cannot read {path}: {getattr(exc, 'strerror', None) or exc}")
            return
        self.count += 1
        stopped = False
        try:
            self.interp.run(text, str(path))
        except KeyboardInterrupt:
            if not self.catch_interrupts:
                raise
            stopped = True
        except DgError as exc:
            self.complain(str(exc.settle()))
        if stopped:
            self.complain("interrupted")
            give_back_memory()

    def cmd_time(self, arg):
        """:time EXPR"""
        if not arg:
            self.complain("usage: :time EXPR")
            return
        start = time.perf_counter()
        ok, _ = self.run_code(arg)
        if ok:
            self.say(f"time: {_duration(time.perf_counter() - start)}")

    def cmd_tape(self, arg):
        """:tape, or :tape dot FILE"""
        nodes = self.interp.last_tape
        words = arg.split(None, 1)
        if words and (words[0] != "dot" or len(words) != 2):
            self.complain("usage: :tape, or :tape dot FILE")
            return
        if nodes is None:
            kept = self.interp.grad_options.keep_tape
            self.complain("no gradient has been computed yet" if kept else
                          "this interpreter does not keep tapes (keep_tape=False)")
            return
        label = self.interp.grad_options.last_label
        if not words:
            if label and not nodes:
                self.say(label)
            else:
                self.say((f"{label}:\n" if label else "") + format_tape(nodes))
            return
        path = Path(os.path.expanduser(words[1].strip("\"'")))
        try:
            path.write_text(tape_dot(nodes), encoding="utf-8")
        except ValueError:          # a NUL character in the path
            self.complain(f"cannot write {str(path)!r}: a path cannot hold a NUL character")
            return
        except OSError as exc:
            self.complain(f"cannot write {path}: {exc.strerror or exc}")
            return
        self.say(f"wrote the tape ({len(nodes)} node{'s' * (len(nodes) != 1)}) to {path}")


COMMANDS = {
    "help": Repl.cmd_help, "h": Repl.cmd_help, "?": Repl.cmd_help,
    "quit": Repl.cmd_quit, "q": Repl.cmd_quit, "exit": Repl.cmd_quit,
    "reset": Repl.cmd_reset, "vars": Repl.cmd_vars, "type": Repl.cmd_type, "load": Repl.cmd_load,
    "time": Repl.cmd_time, "tape": Repl.cmd_tape, "doc": Repl.cmd_doc,
}


def should_submit(text):
    """Enter submits a command, an empty line, complete input, and invalid input (to show its error)."""
    stripped = text.strip()
    if not stripped or stripped.startswith(":"):
        return True
    if _line_ends_in(text.rsplit("\n", 1)[-1]) == "string":
        return True     # a string cannot go on past the line: no more lines could complete it
    return is_complete(text)


# ---------------------------------------------------------------- completion
_PATH = r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*"
_MAP_KEY = re.compile(rf'({_PATH})\[\s*"([^"\\]*)$')
_MEMBER = re.compile(rf"({_PATH})\.(\w*)$")
_WORD = re.compile(r"(?<![\w.])([A-Za-z_]\w*)$")


def _line_ends_in(line):
    """What the end of `line` is inside: "string", "comment" or None."""
    quoted = False
    i = 0
    while i < len(line):
        c = line[i]
        if quoted:
            if c == "\\":
                i += 1
            elif c == '"':
                quoted = False
        elif c == '"':
            quoted = True
        elif c == "#":
            return "comment"
        i += 1
    return "string" if quoted else None


def _in_string_or_comment(line):
    """Whether the end of `line` is inside a string or a comment."""
    return _line_ends_in(line) is not None


def _resolve(interp, path):
    """The value a dotted name refers to, by reading names only (nothing runs); None if unknown."""
    first, *rest = path.split(".")
    cell = interp.main.cells.get(first)
    if cell is None or cell.v is UNBOUND:
        return None
    value = cell.v
    for name in rest:
        if type(value) is Module:
            cell = value.cells.get(name)
            value = cell.v if cell is not None and cell.v is not UNBOUND else None
        elif type(value) is Struct:
            value = value._asdict().get(name)
        else:
            return None
    return value


def complete(interp, before):
    """Completions for the text before the cursor: (text, start_position, display, meta) tuples."""
    line = before.rsplit("\n", 1)[-1]
    m = _MAP_KEY.search(line)
    if m:
        target, prefix = _resolve(interp, m.group(1)), m.group(2)
        if type(target) is not dict:
            return []
        return [(f'{k}"]', -len(prefix), k, describe(v)) for k, v in target.items()
                if type(k) is str and k.startswith(prefix) and '"' not in k and "\\" not in k]
    if _in_string_or_comment(line):
        return []
    m = _MEMBER.search(line)
    if m:
        target, prefix = _resolve(interp, m.group(1)), m.group(2)
        if type(target) is Module:
            members = [(n, c.v) for n, c in target.cells.items() if c.v is not UNBOUND]
        elif type(target) is Struct:
            members = list(target._asdict().items())
        else:
            return []
        return [(n, -len(prefix), n, describe(v)) for n, v in members if n.startswith(prefix)]
    m = _WORD.search(line)
    if not m:
        return []
    prefix = m.group(1)
    found = {}
    for n in KEYWORDS:
        found.setdefault(n, "keyword")
    for n in interp.builtins:
        found.setdefault(n, "builtin")
    for n in interp.names():
        found[n] = describe(interp.main.cells[n].v)
    return [(n, -len(prefix), n, meta) for n, meta in sorted(found.items())
            if n.startswith(prefix) and n != prefix]


class DgCompleter(Completer):
    """prompt_toolkit's view of `complete`, reading the session's current interpreter."""

    def __init__(self, repl):
        self.repl = repl

    def get_completions(self, document, complete_event):
        """Yield the completions at the cursor."""
        for text, start, display, meta in complete(self.repl.interp, document.text_before_cursor):
            yield Completion(text, start_position=start, display=display, display_meta=meta)


# ---------------------------------------------------------------- history
def history_path():
    """The history file: $DG_HISTORY, or ~/.dg_history (with `~` expanded; FileHistory does not)."""
    return os.path.expanduser(os.environ.get("DG_HISTORY") or DEFAULT_HISTORY)


def make_history():
    """A FileHistory at `history_path()`, or an in-memory one when that file cannot be written."""
    path = history_path()
    try:
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        with open(path, "a", encoding="utf-8"):
            pass
    except OSError:
        return InMemoryHistory()
    return FileHistory(path)


# ---------------------------------------------------------------- the prompt
def _key_bindings():
    """Enter submits complete input and otherwise opens an indented new line; Esc Enter always adds a line."""
    kb = KeyBindings()

    @kb.add("enter")
    def _enter(event):
        """Submit when complete; else a new line, indented one level more after an opening bracket."""
        buf = event.current_buffer
        state = buf.complete_state
        if state is not None and state.current_completion is not None:
            buf.apply_completion(state.current_completion)
            return
        if should_submit(buf.text):
            buf.validate_and_handle()
            return
        _newline(buf)

    @kb.add("escape", "enter")
    def _force_newline(event):
        """A new line even when the input is complete."""
        _newline(event.current_buffer)

    at_line_start = Condition(lambda: _only_indent_before_cursor())

    @kb.add("}", filter=at_line_start)
    def _dedent(event):
        """A closing brace at the start of a line goes back one level."""
        buf = event.current_buffer
        before = buf.document.current_line_before_cursor
        if before.endswith(INDENT):
            buf.delete_before_cursor(len(INDENT))
        buf.insert_text("}")

    return kb


def _only_indent_before_cursor():
    """Whether the current line holds only spaces before the cursor."""
    before = get_app().current_buffer.document.current_line_before_cursor
    return before != "" and before.strip() == ""


def _newline(buf):
    """Insert a line break keeping the indentation, one level more after `{`, `(` or `[`."""
    line = buf.document.current_line_before_cursor
    indent = line[:len(line) - len(line.lstrip(" "))]
    if line.rstrip().endswith(("{", "(", "[")):
        indent += INDENT
    buf.insert_text("\n" + indent)


def make_session(repl, input=None, output=None, history=None):
    """The prompt_toolkit session: highlighting, completion, history and the Enter rule."""
    lexer = PygmentsLexer(DgLexer.with_builtins(repl.interp.builtins))
    return PromptSession(
        PROMPT, multiline=True, prompt_continuation=CONTINUATION, lexer=lexer,
        completer=DgCompleter(repl), complete_while_typing=False,
        history=history if history is not None else make_history(),
        auto_suggest=AutoSuggestFromHistory(), key_bindings=_key_bindings(),
        enable_history_search=False, input=input, output=output)


def interact(repl, session):
    """The prompt loop: read an input, run it, until :quit or Ctrl-D."""
    while not repl.done:
        try:
            text = session.prompt()
        except KeyboardInterrupt:       # Ctrl-C at the prompt: drop the input
            continue
        except EOFError:                # Ctrl-D
            break
        try:
            repl.execute(text)
        except KeyboardInterrupt:       # between statements or while printing
            repl.complain("interrupted")
    return 0


def run_piped(repl, stream):
    """Run REPL input from a non-terminal stream: statements as the interactive form would, no UI.

    Returns the exit code: 1 if any input failed, else 0.
    """
    pending = []
    for line in stream:
        if not pending and line.strip().startswith(":"):
            repl.execute(line)
        else:
            pending.append(line)
            text = "".join(pending)
            if should_submit(text):
                pending = []
                repl.execute(text)
        if repl.done:
            return 1 if repl.errors else 0
    rest = "".join(pending)
    if rest.strip():
        repl.execute(rest)      # an unfinished statement: its syntax error shows
    return 1 if repl.errors else 0


def wants_colour(stream):
    """Whether errors written to `stream` should be coloured: a terminal, and no NO_COLOR."""
    try:
        return stream.isatty() and not os.environ.get("NO_COLOR") and os.environ.get("TERM") != "dumb"
    except (AttributeError, ValueError):
        return False


def run_repl(interp, input=None, output=None):
    """Open the REPL on `interp` (what `dg repl` calls); returns the exit code."""
    if input is None and sys.stdin is None:
        raise OSError(9, "cannot read standard input: it is closed")     # `dg` says so in one line
    if input is None and not sys.stdin.isatty():
        return run_piped(Repl(interp, catch_interrupts=False), sys.stdin)
    repl = Repl(interp)
    if wants_colour(sys.stderr):
        repl.paint = lambda text: paint_error(text, interp.builtins)
    session = make_session(repl, input=input, output=output)
    repl.say(f"dg {__version__} (:help for commands, Ctrl-D to leave)")
    return interact(repl, session)
