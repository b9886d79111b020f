"""The `dg` command: run scripts, check them, or open the REPL (reference section 8).

Exit codes: 0 success, 1 a program error, 2 a usage error, 130 interrupted.
Only the REPL imports prompt_toolkit, so `dg run` starts fast.
"""

import argparse
import os
import sys

from . import __version__
from .base.source_files import read_source
from .errors import DgError, OutputFailed

USAGE = """\
usage: dg run [OPTIONS] FILE [ARGS...]   run a script (FILE '-' reads standard input)
       dg [OPTIONS] -c CODE [ARGS...]    run a string
       dg check FILE...                  parse and resolve names without running
       dg repl | dg                      the interactive REPL
       dg lsp                            a language server on standard input/output (docs/editors.md)
       dg --version

options:
  --no-check-numerics   do not stop when a gradient is NaN or infinite
  --jit                 compile every function grad, value_and_grad, jacobian and hessian make
  --explain-jit         say (on standard error) when jit stages a function, and why it falls back
  --backend NAME        what jit compiles with: numpy (default) or xla (needs the xla extra: JAX)
  --processes N         run the program in N processes on this machine, joined so that shard
                        splits its batch over all their devices (needs the xla extra)
  --max-depth N         nested calls allowed (default 10000, at most 1000000)
  --max-steps N         stop after N loop iterations and calls (default: no limit)
  --timeout SECONDS     stop after this much wall-clock time (default: no limit)
  --max-tensor N        the most elements one tensor may have (default: a quarter of memory)
  --seed N              seed the random generator before the program runs
  --files WHAT          files the program may use: all (default), none, or directories
                        separated by '{sep}' (import of the standard library always works)
""".replace("{sep}", os.pathsep)

MAX_DEPTH = 1_000_000   # dsl.base.limits.MAX_DEPTH (not imported: `dg run` loads only what it needs)


class HelpRequested(Exception):
    """`-h` or `--help` among the options: print the usage and succeed."""


class UsageError(Exception):
    """A command line dg does not understand."""


# ---------------------------------------------------------------- the command line, on argparse
class _Parser(argparse.ArgumentParser):
    """argparse, with its complaints turned into UsageError (dg prints its own usage text)."""

    def error(self, message):
        """Raise instead of printing and exiting, naming the option as dg's messages do."""
        option, sep, problem = message.partition(": ")
        if sep and option.startswith("argument -"):
            message = option[len("argument "):].split("/")[-1] + " " + (
                "needs a value" if problem == "expected one argument" else problem)
        raise UsageError(message)


def _number(kind, positive=False, most=None, least=None):
    """An argparse type: a number of `kind`, checked the way the Interpreter would check it."""
    def convert(text):
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"needs a number, got {text!r}") from None
        if positive and not 0 < value < float("inf"):       # also refuses nan
            raise argparse.ArgumentTypeError(f"needs a number above 0, got {text!r}")
        if most is not None and value > most:
            raise argparse.ArgumentTypeError(f"can be at most {most:,}, got {text}")
        if least is not None and value < least:
            raise argparse.ArgumentTypeError(f"needs a number of {least} or more, got {text!r}")
        return value
    return convert


def _backend(text):
    """An argparse type: a backend's name."""
    if text not in ("numpy", "xla"):
        raise argparse.ArgumentTypeError(f"is numpy or xla, got {text!r}")
    return text


FLAGS = ("--no-check-numerics", "--jit", "--explain-jit")
VALUES = {"--max-depth": _number(int, positive=True, most=MAX_DEPTH), "--max-steps": _number(int, positive=True),
          "--timeout": _number(float, positive=True), "--max-tensor": _number(int, positive=True),
          "--seed": _number(int, least=0), "--files": str, "--backend": _backend,
          "--processes": _number(int, positive=True, most=1024)}


def _options(parser):
    """The options every command takes (USAGE describes them)."""
    parser.add_argument("-h", "--help", action="store_true")
    for flag in FLAGS:
        parser.add_argument(flag, action="store_true", default=None)
    for option, kind in VALUES.items():
        parser.add_argument(option, type=kind)
    return parser


def _parser(*positionals):
    """A parser of the options followed by the given positionals (each optional); the last
    takes all the rest, options included, as does `-c` (`dg -c CODE ARGS...`)."""
    parser = _options(_Parser(prog="dg", add_help=False, allow_abbrev=False))
    parser.add_argument("-c", nargs=argparse.REMAINDER, dest="code")
    for name in positionals[:-1]:
        parser.add_argument(name, nargs="?")
    parser.add_argument(positionals[-1], nargs=argparse.REMAINDER)
    return parser


def parse_options(args, *positionals):
    """Read leading options (then the named positionals); return (settings, namespace).

    Settings are keyed by option (`"--seed"`) and hold only the options given. `-h` among the
    options raises HelpRequested; arguments after the program (a script's own `--help`) are
    the script's.
    """
    ns = _parser(*(positionals or ("rest",))).parse_args(args)
    if ns.help:
        raise HelpRequested()
    settings = {}
    for option in (*FLAGS, *VALUES):
        value = getattr(ns, option[2:].replace("-", "_"))
        if value is not None:
            settings[option] = value
    return settings, ns


def make_interpreter(settings, argv=(), keep_tape=False):
    """An Interpreter configured from command-line settings."""
    from .runtime.interpreter import DEFAULT_MAX_TENSOR, Interpreter    # start-up: `dg --version` and `dg --help` load no numpy
    from .base.limits import DEFAULT_MAX_DEPTH     # start-up, as the line above
    interp = Interpreter(
        seed=settings.get("--seed"),
        check_numerics=not settings.get("--no-check-numerics", False),
        max_depth=settings.get("--max-depth", DEFAULT_MAX_DEPTH),
        max_steps=settings.get("--max-steps"),
        timeout=settings.get("--timeout"),
        max_tensor_elements=settings.get("--max-tensor", DEFAULT_MAX_TENSOR),
        keep_tape=keep_tape, files=files_setting(settings.get("--files", "all")),
        jit=settings.get("--jit", False), explain_jit=settings.get("--explain-jit", False),
        backend=settings.get("--backend", "numpy"))
    interp.bind("argv", tuple(argv))
    return interp


def files_setting(text):
    """The --files value as Interpreter(files=...) takes it: "all", "none" or a list of directories."""
    if text in ("all", "none"):
        return text
    return [d for d in text.split(os.pathsep) if d]


def main(argv=None):
    """Entry point of the `dg` command; returns the exit code."""
    args = list(sys.argv[1:] if argv is None else argv)
    try:
        return _dispatch(args)
    except HelpRequested:
        sys.stdout.write(USAGE)
        return 0
    except UsageError as exc:
        sys.stderr.write(f"dg: {exc}\n\n{USAGE}")
        return 2
    except KeyboardInterrupt:
        sys.stderr.write("dg: interrupted\n")
        return 130
    except BrokenPipeError:
        _silence_stdout()
        return 0
    except (OSError, OutputFailed) as exc:      # standard input or output closed, a full disk
        _silence_stdout()
        if sys.stderr is not None:
            sys.stderr.write(f"dg: {getattr(exc, 'strerror', None) or exc}\n")
        return 1


def entry():
    """The `dg` command (and `python -m dsl`): main's exit code. After `dg run`, `dg -c` and
    `dg check` the process ends without tearing down what the program built: freeing a big
    recording or tape took seconds, past the --timeout that had stopped the program."""
    code = main()
    if sys.argv[1:2] and sys.argv[1] in ("run", "-c", "check"):
        for stream in (sys.stdout, sys.stderr):
            try:
                if stream is not None:
                    stream.flush()
            except (OSError, ValueError):
                pass
        os._exit(code)
    sys.exit(code)


class StreamClosed(OSError):
    """A standard stream the command needs is closed (`dg run - <&-`)."""


def _silence_stdout():
    """After the output failed: nothing more goes to it (Python's own flush at exit would fail again)."""
    try:
        sys.stdout = open(os.devnull, "w")
    except OSError:
        sys.stdout = None


def _dispatch(args):
    """Route to a subcommand."""
    if args and args[0] in ("-h", "--help", "help"):
        sys.stdout.write(USAGE)
        return 0
    if args and args[0] == "--version":
        sys.stdout.write(f"dg {__version__}\n")
        return 0
    settings, ns = parse_options(args, "rest")
    if ns.code is not None:
        if ns.rest or not ns.code:
            raise UsageError("-c needs a program" if not ns.code else f"unexpected arguments before -c: {ns.rest}")
        return _run_source(settings, ns.code[0], "<string>", ns.code[1:])
    rest = ns.rest
    if not rest:
        return _repl(settings, [])
    command, rest = rest[0], rest[1:]
    if command == "run":
        more, ns = parse_options(rest, "target", "script_args")
        settings.update(more)
        target, script_args = ns.target, ns.script_args
        if target is None or ns.code is not None:
            raise UsageError("run needs a file (or - for standard input)")
        if settings.get("--processes", 1) > 1:
            if target == "-":
                raise UsageError("--processes needs a file: each process reads the program")
            from .processes import launch      # start-up: only `dg run --processes` starts processes
            return launch(settings["--processes"], args)
        if target == "-":
            if sys.stdin is None:
                raise StreamClosed("cannot read the program from standard input: it is closed")
            return _run_source(settings, sys.stdin.read(), "<stdin>", script_args)
        return _run_file(settings, target, script_args)
    if command == "check":
        if not rest:
            raise UsageError("check needs at least one file")
        return _check(rest)
    if command == "repl":
        more, ns = parse_options(rest, "rest")
        settings.update(more)
        return _repl(settings, ns.rest)
    if command == "lsp":
        if rest:
            raise UsageError(f"unexpected arguments for lsp: {' '.join(rest)}")
        return _lsp()
    raise UsageError(f"unknown command {command!r}")


def _report(exc):
    """Print a program error the reference section 7 way, or an internal error with its traceback."""
    if isinstance(exc, DgError):
        sys.stderr.write(str(exc.settle()) + "\n")
    else:
        sys.stderr.write("internal error: dg itself failed; please report this with the program that caused it\n")
        import traceback      # only for an internal error: not at every start
        sys.stderr.write("".join(traceback.format_exception(type(exc), exc, exc.__traceback__)))
    return 1


def _run_source(settings, text, filename, script_args):
    """Run program text."""
    interp = make_interpreter(settings, script_args)
    try:
        interp.run(text, filename)
    except (KeyboardInterrupt, BrokenPipeError, OutputFailed):
        raise
    except Exception as exc:      # a DgError, or a bug in dg reported as one
        _flush()
        return _report(exc)
    _flush()
    return 0


def _run_file(settings, path, script_args):
    """Run a .dg file."""
    try:
        text = read_source(path)
    except OSError as exc:
        sys.stderr.write(f"dg: cannot read {path}: {exc.strerror or exc}\n")
        return 2          # a file named on the command line that cannot be opened: a usage error
    except UnicodeDecodeError:
        sys.stderr.write(f"dg: {path} is not UTF-8 text\n")
        return 1
    return _run_source(settings, text, path, script_args)


def _check(paths):
    """Parse and resolve each file; print every error; exit 1 if any."""
    found = unreadable = 0
    for path in paths:
        try:
            text = read_source(path)
        except OSError as exc:
            sys.stderr.write(f"dg: cannot read {path}: {exc.strerror or exc}\n")
            unreadable += 1
            continue
        except UnicodeDecodeError:
            sys.stderr.write(f"dg: {path} is not UTF-8 text\n")
            found += 1
            continue
        for err in make_interpreter({}).check(text, path):   # binds argv, as `dg run` does
            sys.stderr.write(str(err) + "\n\n")
            found += 1
    if found:
        sys.stderr.write(f"{found} error{'s' * (found != 1)} found\n")
    if unreadable:
        return 2
    if found:
        return 1
    sys.stdout.write(f"ok: {len(paths)} file{'s' * (len(paths) != 1)} checked\n")
    return 0


def _repl(settings, rest):
    """Open the REPL (imported only here: it needs prompt_toolkit)."""
    if rest:
        raise UsageError(f"unexpected arguments for the REPL: {' '.join(rest)}")
    try:
        from .repl import run_repl     # start-up: prompt_toolkit only for the REPL
    except ImportError:
        sys.stdout.write(USAGE)
        return 0
    return run_repl(make_interpreter(settings, (), keep_tape=True))


def _lsp():
    """Serve the language server protocol (needs pygls: the `lsp` extra)."""
    try:
        from .lsp import main as serve     # start-up: the language server's modules only for `dg lsp`
    except ImportError as exc:
        sys.stderr.write(f"dg lsp needs pygls ({exc}): pip install 'dg-lang[lsp]'\n")
        return 1
    return serve()


def _flush():
    """Flush standard output: OutputFailed if that fails (a closed pipe is left to main)."""
    if sys.stdout is None:
        return
    try:
        sys.stdout.flush()
    except BrokenPipeError:
        raise
    except (OSError, ValueError) as exc:
        raise OutputFailed(exc) from None
