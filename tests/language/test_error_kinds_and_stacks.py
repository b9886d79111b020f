"""Errors against reference section 7: each error's kind, its location and the dg call stack.

Each test names the reference sentence it holds dg to.
"""

import io

import numpy as np
import pytest

import dsl
from dsl.errors import DgError, format_error


def test_a_negative_clip_limit_is_a_value_error(run_error):
    # SPEC 7: `value` is a bad value; `type` is a wrong argument type. A negative max is a number
    # (the right type) with a bad value, but it was reported as a type error.
    err = run_error("let t = clip_by_global_norm((1.0,), -1.0)")
    assert err.kind == "value" and "-1.0" in err.message
    assert run_error('clip_by_global_norm((1.0,), "a")').kind == "type"


def test_an_empty_path_is_a_value_error(run_error):
    # SPEC 7: an empty string is a string (the right type) with a bad value.
    assert run_error('load_csv("")').kind == "value"
    assert run_error('load("")').kind == "value"
    assert run_error("load_csv(3)").kind == "type"


def test_an_error_in_a_default_argument_shows_the_called_function(run_error):
    # SPEC 7: errors show the dg call stack. Defaults are evaluated in the callee when it is called,
    # but an error there left out the `= in f, called at ...` frame of the function being entered.
    src = """fn f(a, b=a[5]) {
    return a
}
fn g() {
    return f((1, 2))
}
g()
"""
    err = run_error(src, filename="t.dg")
    assert err.kind == "index" and (err.line, err.column) == (1, 11)
    text = format_error(err)
    assert "= in f, called at t.dg:5:12\n" in text
    assert "= in g, called at t.dg:7:1" in text


def test_a_missing_argument_error_does_not_list_parameters_with_defaults(run_error):
    # SPEC 7: a wrong number of arguments is a type error with a clear message. nn.linear(2) said
    # "linear is missing a value for 'n_out', 'init'", though init has a default.
    err = run_error("import nn\nnn.linear(2)")
    assert err.kind == "type" and err.message == "linear is missing a value for 'n_out'"
    err = run_error("fn f(a, b, c, d=1) { return a }\nf(1)")
    assert err.message == "f is missing a value for 'b', 'c'"


def test_a_huge_index_tensor_entry_is_reported_as_given(run_error):
    # SPEC 7: out of range is an index error. The check ran after the cast to int64, so 1e30 wrapped
    # and the message said "index -9223372036854775808 is out of range".
    for src in ("zeros(3)[[1e30]]", "gather(zeros(3), [1e30])"):
        err = run_error(src)
        assert err.kind == "index" and err.message.startswith("index 1000000000000000019884624838656 ")
    assert run_error("zeros(3)[[0.0, -4.0]]").message.startswith("index -4 ")


def test_maximum_of_a_non_number_reads_as_a_sentence(run_error):
    # SPEC 7: a wrong argument type is a type error with a clear message; it said
    # "cannot maximum a string".
    err = run_error('maximum(zeros(2), "a")')
    assert err.kind == "type" and err.message == "cannot take the maximum of a string"
    assert run_error("minimum(none, 1.0)").message == "cannot take the minimum of none"


def test_a_non_number_fraction_is_a_type_error(run_error):
    # SPEC 7: a wrong argument type is a type error; train_test_split(x, y, "a") was a value error.
    assert run_error('train_test_split(zeros(3), zeros(3), "a")').kind == "type"
    assert run_error("train_test_split(zeros(3), zeros(3), 1.5)").kind == "value"


def test_a_bool_mask_with_too_many_axes_names_the_shapes(run_error):
    # SPEC 7: incompatible shapes are a shape error. A (2, 2) mask on a (3,) tensor said
    # "too many indices (1) for a tensor of shape (3,)", as an index error.
    err = run_error("let x = zeros(3)\nlet y = x[zeros((2, 2)) > 0]")
    assert err.kind == "shape" and "(2, 2)" in err.message and "(3,)" in err.message
    assert run_error("let x = zeros(3)\nlet y = x[zeros(2) > 0]").kind == "shape"
    assert run_error("zeros(3)[0, 0]").kind == "index"


@pytest.mark.parametrize("backend", ["numpy", "xla"])
def test_an_error_inside_jit_shows_the_functions_the_recording_inlined(backend):
    # SPEC 7: errors show the dg call stack, jitted or not. A recording inlines the functions f
    # calls, and its replay (a loop rolled while staging, the compiled code on a later call) knew
    # the failing line but not the calls that led to it: `= in inner, called at ...` was missing.
    if backend == "xla":
        pytest.importorskip("jax")
    src = """fn inner(x, i) {
    return x[i]
}
fn outer(x, n) {
    print("start")
    let s = 0.0
    for i in range(n) {
        s = s + inner(x, i) * 2.0
    }
    return s
}
let f = jit(outer)
let a = f([1.0, 2.0, 3.0], 3)
let b = f([1.0, 2.0, 3.0], 3)
f(X, N)
"""
    stacked = "= in inner, called at t.dg:8:17\n  = in outer\n  = in jit(outer), called at t.dg:15:1"
    # past the end on the loop's last iteration and before it (a new signature: staged again),
    # and a tensor too short for the recording of n = 3 (its compiled code)
    for x, n in (("[1.0, 2.0, 3.0]", 4), ("[1.0, 2.0, 3.0]", 5), ("[1.0, 2.0]", 3)):
        out = io.StringIO()
        with pytest.raises(DgError) as info:
            dsl.Interpreter(stdout=out, backend=backend).run(src.replace("X, N", f"{x}, {n}"), "t.dg")
        err = info.value.settle()
        assert err.kind == "index" and (err.line, err.column) == (2, 12)
        assert stacked in format_error(err)
        assert out.getvalue().count("start") == 3      # the failed call printed once
    # positions read from a tensor: the same signature, the compiled code's error
    out = io.StringIO()
    interp = dsl.Interpreter(stdout=out, backend=backend)
    interp.run(src.split("let f")[0] + "fn g(x, idx) {\n    return sum(inner(x, idx))\n}\nlet jg = jit(g)\n", "t.dg")
    jg = interp.function("jg")
    assert jg(np.array([1.0, 2.0, 3.0]), np.array([0.0, 2.0])) == 4.0 and jg(np.array([1.0, 2.0, 3.0]), np.array([1.0, 2.0])) == 5.0
    with pytest.raises(DgError) as info:
        jg(np.array([1.0, 2.0, 3.0]), np.array([0.0, 7.0]))
    assert "= in inner, called at t.dg:13:16\n  = in g" in format_error(info.value.settle())
