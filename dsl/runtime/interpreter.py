"""The interpreter: parse, resolve, compile and run programs; import modules.

One Interpreter holds one program's world: its module globals, its random
generator, its limits and its differentiation settings. Several interpreters
in one process share nothing.
"""

import os
import sys
import threading
from collections import OrderedDict
from pathlib import Path

import numpy as np

from ..base import bigstack, sandbox
from ..base.cells import Cell, UNBOUND
from ..base.cycles import gc_paused
from ..base.limits import DEFAULT_MAX_DEPTH, Limits, RECURSION
from ..base.resources import stdlib_dir
from ..base.sandbox import FileAccess
from ..base.source_files import read_source
from ..base.suggest import module_hint, name_hint
from ..core import ops, tape
from ..core.trees import children, is_container, rebuild
from ..core.values import Module
from ..errors import DgError, Source, Span, error
from ..frontend.parser import parse
from ..frontend.resolver import Resolver
from ..transform.jit.jit import BACKENDS
from ..transform.transforms import Options
from . import embed
from .builtins.table import make_builtins
from .statements import compile_program


def _default_max_tensor():
    """A quarter of the machine's memory, in float64 elements (2**28 if it cannot be read)."""
    try:
        memory = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return 2 ** 28
    return max(2 ** 20, memory // 4 // 8)


DEFAULT_MAX_TENSOR = _default_max_tensor()   # elements; see "Reliability" in the README


class Interpreter:
    """A dg interpreter. See the README's "Using dg from Python" for the embedding API."""

    def __init__(self, seed=None, check_numerics=True, max_depth=DEFAULT_MAX_DEPTH, max_steps=None,
                 timeout=None, max_tensor_elements=DEFAULT_MAX_TENSOR, stdout=None, keep_tape=False,
                 files="all", jit=False, explain_jit=False, backend="numpy"):
        self.limits = Limits(max_depth, max_steps, timeout)     # checks them: ValueError, TypeError
        if max_tensor_elements is not None and (type(max_tensor_elements) is not int or max_tensor_elements < 1):
            raise ValueError(f"max_tensor_elements must be an int of at least 1 or None, got {max_tensor_elements!r}")
        self.files = FileAccess(files)      # what import/load_csv/load/save may touch (dsl/base/sandbox.py)
        self.grad_options = Options(check_numerics, keep_tape)
        self.max_tensor_elements = max_tensor_elements
        self._stdout = stdout
        self.reseed(seed)
        self.modules = {}          # resolved path -> Module
        self.loading = []          # paths being imported, to find cycles
        self.main = Module("__main__", None, {})
        self.staging = []          # the traces jit and vmap are recording now, innermost last
        self.unrolled_loops = set()     # loops jit writes out, one copy per iteration (dsl/transform/jit/rolling.py)
        self.nested_whiles = set()      # while loops jit rolls inside a rolled loop's body (jit/loop_modes.py: retry)
        self.loop_notes = None          # while jit stages: (line, why) of each loop it writes out
        self.jit = jit                  # compile every gradient function (dg run --jit)
        self.explain_jit = explain_jit  # jit says when it stages and why it falls back
        if backend not in BACKENDS:
            raise ValueError(f"backend must be one of {BACKENDS}, got {backend!r}")
        self.backend = backend          # what jit compiles with unless a call of it names another
        self.compiled = OrderedDict()   # with `jit`: (transform, function, options) -> its compiled version
        self.builtins = make_builtins(self)
        self.display = None                # a notebook's display(png_bytes): where plot shows pictures
        self.progress_live = False         # draw progress bars even when stderr is no terminal (notebooks)
        self.owner = None                  # the thread running a program now, if any
        self.busy = threading.Lock()

    # -- settings -----------------------------------------------------------
    @property
    def stdout(self):
        """Where print writes: the stream given, or the current sys.stdout."""
        return self._stdout if self._stdout is not None else sys.stdout

    @property
    def check_numerics(self):
        """Whether a NaN or infinite gradient stops the program (reference 6.8)."""
        return self.grad_options.check_numerics

    @check_numerics.setter
    def check_numerics(self, value):
        self.grad_options.check_numerics = bool(value)

    def reseed(self, seed):
        """Restart the random generator (PCG64: the same numbers on every machine).

        The seed is None (fresh entropy) or an int of at least 0, as numpy takes it; anything
        else is refused here rather than at the first random draw."""
        if seed is not None and (type(seed) is not int or seed < 0):
            raise (ValueError if type(seed) is int else TypeError)(
                f"seed must be an int of at least 0 or None, got {seed!r}")
        self._seed = seed
        self._rng = None

    @property
    def rng(self):
        """The random generator, made at the first draw (numpy.random costs 4 ms of start-up)."""
        if self._rng is None:
            self._rng = np.random.Generator(np.random.PCG64(self._seed))
        return self._rng

    @property
    def last_tape(self):
        """The nodes of the most recent gradient computation (see dsl.tape_rows)."""
        return self.grad_options.last_tape

    # -- running ------------------------------------------------------------
    def run(self, src, filename="<input>", echo=None):
        """Run dg source text; return the value of its last expression statement."""
        _check_text(src, filename)
        program = parse(src, filename)
        key = _script_key(filename)
        if key is not None:     # a script that imports itself is an import cycle, found at that import
            self.loading.append(key)
        try:
            return _detached(self._execute(program, self.main, echo))
        finally:
            if key is not None and self.loading and self.loading[-1] == key:
                self.loading.pop()

    def run_file(self, path):
        """Run a .dg file."""
        path = Path(path)
        try:
            text = read_source(path)
        except OSError as exc:
            raise error("import", f"cannot read {path}: {exc.strerror or exc}") from None
        except UnicodeDecodeError:
            raise error("value", f"{path} is not UTF-8 text") from None
        return self.run(text, str(path))

    def check(self, src, filename="<input>"):
        """Parse and resolve without running; return every error found (reference section 8)."""
        _check_text(src, filename)
        try:
            program = parse(src, filename)
        except DgError as exc:
            return [exc]
        resolver = Resolver(dict(self.main.cells), self.builtins)
        try:
            with gc_paused():
                resolver.resolve_program(program)
        except RecursionError:
            return resolver.problems + [self.limits.too_nested(Span(program.source, 1, 1))]
        problems = list(resolver.problems)
        for stmt in resolver.imports:       # a module that cannot be found is a name that does not resolve
            try:
                self.find_module(stmt.module, stmt.span, program.source)
            except DgError as exc:
                problems.append(exc)
        return sorted(problems, key=lambda e: (e.span.line, e.span.column) if e.span else (0, 0))

    def _execute(self, program, module, echo=None):
        """Resolve, compile and run a parsed program in a module's namespace."""
        try:
            with gc_paused():      # resolving and compiling build trees too (see cycles.py)
                resolver = Resolver(module.cells, self.builtins)
                resolver.resolve_program(program)
                for problem in resolver.problems:
                    if problem.kind == "syntax":      # 'return' or 'break' out of place: nothing runs
                        raise problem
                code = compile_program(program, self, echo)
        except RecursionError:      # deep nesting under a small recursion limit (see dsl/frontend/nesting.py)
            raise self.limits.too_nested(Span(program.source, 1, 1)) from None
        return self.call_in_run(code)

    def call_in_run(self, fn, *args, **kwargs):
        """Call `fn` as part of a run: limits armed for the outermost call, the run's
        error conversions applied (recursion and memory exhaustion become `limit`
        errors), and a DgError's call stack closed when it leaves the outermost call."""
        me = threading.get_ident()
        outermost = self.owner != me        # not already running in this thread
        if outermost and bigstack.needed(self.limits.max_depth):
            return bigstack.run(self.call_in_run, (fn, *args), kwargs, self.limits.max_depth)
        if outermost:
            # its counters and limits serve one run at a time: a second thread waits for nothing
            # and corrupts nothing, it is told
            if not self.busy.acquire(blocking=False):
                raise error("limit", "this interpreter is running a program in another thread; "
                                     "use one Interpreter per thread")
            self.owner = me
            self.limits.start()
            tape.set_span(None)      # nodes recorded before any dg call site have no location
            need = self.limits.recursion_limit()     # a deep run needs more; restored after it
            RECURSION.raise_to(need)
        saved_max = ops.core.max_elements()
        ops.core.set_max_elements(self.max_tensor_elements)
        policy = sandbox.enter(self.files)
        try:
            return fn(*args, **kwargs)
        except DgError as exc:
            raise exc.settle() if outermost else exc
        except RecursionError:
            raise self.limits.too_nested(tape.get_span()) from None
        except MemoryError:
            raise error("limit", "out of memory", tape.get_span()) from None
        finally:
            sandbox.leave(policy)
            ops.core.set_max_elements(saved_max)     # a nested interpreter's limit ends with its call
            if outermost:
                self.limits.depth = 0
                RECURSION.release(need)
                self.owner = None
                self.busy.release()

    # -- modules ------------------------------------------------------------
    def import_module(self, name, span, origin):
        """Find NAME.dg beside the importing file, then in the standard library; run it once."""
        path = self.find_module(name, span, origin)
        key = str(path)
        if key in self.modules:
            return self.modules[key]
        if key in self.loading:
            chain = " -> ".join(Path(p).name for p in self.loading[self.loading.index(key):] + [key])
            raise error("import", f"import cycle: {chain}", span)
        try:
            text = read_source(path)
        except (OSError, UnicodeDecodeError) as exc:
            raise error("import", f"cannot read module {path}: {getattr(exc, 'strerror', None) or exc}",
                        span) from None
        module = Module(name, key, {})
        self.loading.append(key)
        try:
            program = parse(Source(key, text))
            self._execute(program, module)
        except DgError as exc:      # the stack shows which import ran the failing module
            exc.exit_function(f"module {name}")
            exc.add_call(span)
            raise
        finally:
            self.loading.pop()
        self.modules[key] = module
        return module

    def find_module(self, name, span, origin):
        """The path of NAME.dg beside the importing file, else in the standard library (an import error if neither)."""
        candidates = []
        origin_path = Path(origin.name) if origin is not None and not origin.name.startswith("<") else None
        base = origin_path.parent if origin_path is not None else Path.cwd()
        beside = base / f"{name}.dg"
        if self.files.allows(beside):       # the file policy (dsl/base/sandbox.py); the stdlib is always allowed
            candidates.append(beside)
        candidates.append(stdlib_dir() / f"{name}.dg")
        path = next((c.resolve() for c in candidates if sandbox.probe(c, "is_file")), None)
        if path is None:
            looked = " and ".join(str(c.parent) for c in candidates)
            denied = "" if candidates[0] == beside else "; this program may not read modules outside it"
            raise error("import", f"no module named '{name}' (looked for {name}.dg in {looked}{denied})", span,
                        hint=module_hint(name))
        return path

    # -- names --------------------------------------------------------------
    def names(self):
        """The defined top-level names of the main program."""
        return [n for n, c in self.main.cells.items() if c.v is not UNBOUND]

    def lookup(self, name):
        """The dg value of a top-level name (a `name` error if undefined)."""
        cell = self.main.cells.get(name)
        if cell is None or cell.v is UNBOUND:
            if name in self.builtins:
                return self.builtins[name]
            raise error("name", f"'{name}' is not defined",
                        hint=name_hint(name, [*self.builtins, *self.names()]))
        return cell.v

    def bind(self, name, value):
        """Set a top-level name to a dg value."""
        cell = self.main.cells.get(name)
        if cell is None:
            self.main.cells[name] = Cell(value)
        else:
            cell.v = value

    # -- embedding: Python values in and out (dsl/runtime/embed.py, docs/python.md) --
    def eval(self, expr):
        """The value of one dg expression, converted to Python."""
        _check_text(expr, None)
        return embed.evaluate(self, expr)

    def get(self, name):
        """A top-level name's value, converted to Python (arrays are copies)."""
        return embed.get(self, name)

    def set(self, name, value):
        """Bind a top-level name to a Python value (converted; arrays are copied)."""
        embed.set_(self, name, value)

    def function(self, name):
        """A dg function as a Python callable that converts arguments and results."""
        return embed.function(self, name)

    def grad(self, name, argnums=0):
        """A Python callable returning the gradient of dg function `name`, shaped like the arguments."""
        return embed.grad(self, name, argnums)

    def value_and_grad(self, name, argnums=0):
        """A Python callable returning (value, gradient) of dg function `name`."""
        return embed.value_and_grad(self, name, argnums)

    def define(self, name, fn, vjp=None):
        """Make Python callable `fn` a dg function; `vjp(*args, out, g)` makes it differentiable."""
        embed.define(self, name, fn, vjp)

    def tape(self):
        """The most recent gradient computation's tape as rows (dsl.runtime.tape_view.TapeRow)."""
        return embed.tape_of(self)


def _check_text(src, filename):
    """The embedding API takes source as a str and a file name as a str (or None)."""
    if not isinstance(src, str):
        raise TypeError(f"dg source must be a str, got {type(src).__name__}")
    if filename is not None and not isinstance(filename, str):
        raise TypeError(f"filename must be a str, got {type(filename).__name__}")


def _script_key(filename):
    """The resolved path of a script run from a file (as imports key modules), or None for "<...>" names."""
    if not filename or filename.startswith("<"):
        return None
    try:
        return str(Path(filename).resolve())
    except (OSError, RuntimeError, ValueError):
        return None


def _detached(value):
    """A dg value with its tensors copied: the caller may change them without changing dg's values."""
    try:
        return _copy_tensors(value)
    except RecursionError:      # nested deeper than Python's stack: hand it over as it is
        return value


def _copy_tensors(value):
    """_detached without the guard against deep nesting."""
    if type(value) is np.ndarray:
        return value.copy()
    if is_container(value):
        return rebuild(value, [_copy_tensors(v) for v in children(value)])
    return value
