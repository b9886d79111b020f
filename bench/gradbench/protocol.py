"""GradBench's protocol: one JSON message per line in, one JSON response per line out.

Messages (see GradBench's CONTRIBUTING.md, "Protocol"): `start` is answered
with the tool's name, `define` loads the module's dg program, `evaluate` runs
one of its functions at least `min_runs` times and for at least `min_seconds`,
with one "evaluate" timing per run, and anything else is acknowledged. Every
failure (an unknown module or function, input that is not JSON, a dg error) is
an answer with `success: false` and a one-line reason: the tool never stops
before its input ends.
"""

import json
import os
import time
from pathlib import Path

import dsl
from dsl.runtime.compiler import call_value
from dsl.runtime.embed import call_dg
from dsl.errors import DgError

from .convert import to_dg, to_json

PROGRAMS = Path(__file__).resolve().parent


class Failure(Exception):
    """A request the tool answers with success: false and this message."""


class Tool:
    """The dg tool: one interpreter per defined module."""

    def __init__(self, programs=PROGRAMS):
        self.programs = Path(programs)
        self.modules = {}       # module name -> (interpreter, its `gradbench` map)

    def answer(self, line):
        """The response (a dict) to one line of input."""
        try:
            message = json.loads(line)
        except ValueError as exc:
            return {"id": None, "success": False, "error": f"the message is not JSON: {exc}"}
        if not isinstance(message, dict):
            return {"id": None, "success": False, "error": "the message is not a JSON object"}
        reply = {"id": message.get("id")}
        kind = message.get("kind")
        try:
            if kind == "start":
                reply["tool"] = "dg"
            elif kind == "define":
                started = time.perf_counter_ns()
                self.define(message.get("module"))
                reply.update(success=True, timings=[{"name": "define",
                                                     "nanoseconds": time.perf_counter_ns() - started}])
            elif kind == "evaluate":
                output, timings = self.evaluate(message.get("module"), message.get("function"),
                                                message.get("input"))
                reply.update(success=True, output=output, timings=timings)
        except Failure as exc:
            reply.update(success=False, error=str(exc))
        except DgError as exc:
            reply.update(success=False, error=_one_line(exc))
        except Exception as exc:        # a bug of ours must not end the run either
            reply.update(success=False, error=f"internal error: {type(exc).__name__}: {exc}")
        return reply

    def define(self, module):
        """Load bench/gradbench/MODULE.dg (once) and check that it offers a `gradbench` map."""
        if not isinstance(module, str) or not module.isidentifier():
            raise Failure(f"dg has no program for the module {module!r}")
        if module in self.modules:
            return self.modules[module]
        path = self.programs / f"{module}.dg"
        if not path.is_file():
            raise Failure(f"dg has no program for the module {module!r}")
        # DG_BACKEND=xla: every jit of the programs compiles with XLA (docs/gradbench.md)
        interp = dsl.Interpreter(seed=0, keep_tape=False, backend=os.environ.get("DG_BACKEND", "numpy"))
        interp.run_file(path)
        functions = interp.lookup("gradbench") if "gradbench" in interp.names() else None
        if type(functions) is not dict:
            raise Failure(f"{path.name} does not end with a map `gradbench` of its functions")
        self.modules[module] = (interp, functions)
        return self.modules[module]

    def evaluate(self, module, function, data):
        """Run one function of a module on a JSON input; return (output, timings)."""
        interp, functions = self.define(module)
        entry = functions.get(function) if isinstance(function, str) else None
        if entry is None:
            raise Failure(f"the module {module!r} has no function {function!r} "
                          f"(it has {', '.join(map(repr, functions))})")
        runs, seconds = _runs(data)
        prepare, run = entry if type(entry) is tuple else (None, entry)
        value = to_dg(data)
        if prepare is not None:         # untimed, as GradBench's own tools parse and set up untimed
            value = call_dg(interp, prepare, (value,), {})

        def timed():
            # the runs of one evaluation are one run of the interpreter (its limits armed once, as
            # for a dg program calling the function in a loop), and each is timed alone, as
            # GradBench's own tools time their function alone
            timings, elapsed, out = [], 0, None
            while len(timings) < runs or elapsed < seconds:
                started = time.perf_counter_ns()
                out = call_value(run, (value,), {}, None)
                took = time.perf_counter_ns() - started
                timings.append({"name": "evaluate", "nanoseconds": took})
                elapsed += took / 1e9
            return out, timings
        out, timings = interp.call_in_run(timed)
        return to_json(out), timings


def _runs(data):
    """min_runs and min_seconds of an input that extends GradBench's Runs (else one run)."""
    if not isinstance(data, dict):
        return 1, 0.0
    runs, seconds = data.get("min_runs", 1), data.get("min_seconds", 0.0)
    if type(runs) is not int or runs < 1 or type(seconds) not in (int, float) or seconds < 0:
        raise Failure("min_runs must be a positive int and min_seconds a non-negative number")
    return runs, float(seconds)


def _one_line(exc):
    """A dg error as one line: its kind, message and where."""
    where = f" at {exc.span.where()}" if getattr(exc, "span", None) is not None else ""
    return f"error[{exc.kind}]: {exc.message}{where}"


def serve(stdin, stdout):
    """Answer every line of `stdin` on `stdout`, flushing each answer."""
    tool = Tool()
    for line in stdin:
        if not line.strip():
            continue
        stdout.write(json.dumps(tool.answer(line)) + "\n")
        stdout.flush()
