"""Every builtin called with odd arguments, systematically rather than at random: each keyword
argument set to odd values, and each position given a structure or matrix being differentiated.
The outcome must be a value or a located dg error (tests/fuzz_harness.py), never a Python
exception. CI runs a part of the cases (one first argument per keyword value, every sixth
structure case), each plain and under one transformation; a long run (DG_FUZZ_EXAMPLES or
DG_FUZZ_SCALE) runs every case plain and under grad, jit and vmap."""

import inspect

import pytest

import dsl
from fuzz_harness import judged, long_run

BUILTINS = dsl.Interpreter().builtins
# effects, files and the clock, which the sweep would only make slow (the random fuzzers call them)
LEFT_OUT = {"print", "help", "time", "seed", "save", "load", "load_csv", "plot", "progress", "error", "assert",
            "can_plot", "devices", "shard", "batches", "train_test_split"}
NAMES = sorted(n for n in BUILTINS if n not in LEFT_OUT)
ODD = ["none", "(0, 1)", "-3", "5", "0", "true", '"a"', "(0, 0)", "1.5", "[0.0, 1.0]", "()"]
FIRSTS = ["x", "x, x", "x, 2", "x, [0.0, 1.0]", "x, (2, 2)"]
STRUCTURES = ["(1.0, 2.0)", "S(1.0, [1.0, 2.0])", '{"a": 1.0, "b": 2.0}', "[[1.0, 2.0], [3.0, 4.0]]",
              "((1.0, 2.0), (3.0, 4.0))", "(1.0, true)"]
OTHERS = ["1.0", "2", "[1.0, 2.0]", "(2, 2)", "true", "none", '"a"', "fn(a) => a"]


def keywords(name):
    """The builtin's parameters that have a default."""
    try:
        params = inspect.signature(BUILTINS[name]).parameters.values()
    except (TypeError, ValueError):
        return []
    return [p.name for p in params if p.default is not inspect.Parameter.empty]


def wrapped(call, arg, k):
    """`call` of x (a function of x) applied to arg: plain, or under grad, jit or vmap; CI takes the
    plain call and the k-th transformation, a long run all of them."""
    forms = [f"(fn(x) => {call})({arg})", f"grad(fn(x) => sum(tensor(tree_leaves({call}))))({arg})",
             f"jit(fn(x) => {call})({arg})", f"vmap(fn(x) => {call})({arg})"]
    return forms if long_run() else [forms[0], forms[1 + k % 3]]


@pytest.mark.parametrize("name", NAMES)
def test_each_keyword_set_to_odd_values(name):
    k = 0
    for kw in keywords(name):
        for value in ODD:
            k += 1
            for first in FIRSTS if long_run() else [FIRSTS[k % len(FIRSTS)]]:     # CI: one first argument
                for program in wrapped(f"{name}({first}, {kw}={value})", "[[1.0, 2.0], [3.0, 4.5]]", k):
                    judged(f"struct S {{ a, b }}\nlet r = {program}\n", "sweep")


@pytest.mark.parametrize("name", NAMES)
def test_each_position_given_a_structure_being_differentiated(name):
    k = 0
    for structure in STRUCTURES:
        for n in (1, 2, 3):
            for at in range(n):
                for other in OTHERS if n > 1 else [None]:
                    args = [other] * n
                    args[at] = "x"
                    k += 1
                    if not long_run() and k % 6:        # CI: every sixth
                        continue
                    for program in wrapped(f"{name}({', '.join(args)})", structure, k):
                        judged(f"struct S {{ a, b }}\nlet r = {program}\n", "sweep")
