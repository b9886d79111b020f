"""Builtins against reference sections 4-5 where they are easy to get wrong: keyword names, masks
kept masks, empty axes, clip_by_global_norm, tree_map over structs, f-string specs.

Each test names the reference sentence (or the numpy behaviour) it holds dg to.
"""

import pytest


def test_clip_by_global_norm_divides_by_the_norm_first(run):
    # SPEC 5: clip_by_global_norm(tree, max). Computed as x * (max / norm), (3, 4) clipped to 1
    # printed (0.6000000000000001, 0.8); optax's (x / norm) * max gives the exact (0.6, 0.8).
    assert run("print(clip_by_global_norm((3.0, 4.0), 1.0))") == "((0.6, 0.8), 5.0)\n"
    assert run('print(clip_by_global_norm({"a": [3.0, 4.0]}, max=2.0))') == '({"a": [1.2, 1.6]}, 5.0)\n'
    assert run("print(clip_by_global_norm((3.0, 4.0), 10.0))") == "((3.0, 4.0), 5.0)\n"


def test_neg_takes_its_argument_by_keyword_like_the_other_math_builtins(run):
    # SPEC 4: keyword arguments hold for builtins; every unary math builtin names its argument x
    # (exp(x=...), sqrt(x=...)), but neg's was a.
    assert run("print(neg(x=2.0), neg(3), exp(x=0.0))") == "-2.0 -3 1.0\n"


def test_negative_counts_for_seed_and_linspace_are_value_errors(run_error):
    # SPEC 7: `value` is a bad value; `type` a wrong argument type. seed(-1) said
    # "type: seed needs a non-negative int, got int".
    err = run_error("seed(-1)")
    assert err.kind == "value" and "got -1" in err.message
    assert run_error("seed(1.5)").kind == "type"
    err = run_error("print(linspace(0, 1, -2))")
    assert err.kind == "value" and "got -2" in err.message
    assert run_error('print(linspace(0, 1, "a"))').kind == "type"


def test_gelu_matches_the_erf_reference_to_the_last_bit(run):
    # SPEC 5: gelu is "the exact erf form", x * (1 + erf(x / sqrt(2))) / 2 as JAX and a math.erf
    # check write it; x * sqrt(0.5) inside erf printed 0.841344746068543 for gelu(1.0).
    import math
    ref = [0.5 * x * (1.0 + math.erf(x / math.sqrt(2.0))) for x in (1.0, -1.0, 0.5)]
    assert run("print(gelu(1.0), gelu([-1.0, 0.5]))") == f"{ref[0]!r} [{ref[1]!r}, {ref[2]!r}]\n"
    assert run("print(gelu(1.0))") == "0.8413447460685429\n"


def test_fstring_numeric_spec_formats_a_bool_as_its_int(run):
    # SPEC 2: f-string fields use Python's format-spec mini-language, where f"{True:d}" is "1";
    # dg formatted the text "true" and failed with "Unknown format code 'd'".
    assert run('print(f"[{true:d}][{false:.1f}][{true:>5}][{false}]")') == "[1][0.0][ true][false]\n"


def test_clip_by_global_norm_scales_every_leaf_the_norm_counts(run):
    # SPEC 5: clip_by_global_norm returns (clipped, norm_before_clipping); the int 3 counted in the
    # norm but stayed 3, so the "clipped" tree had norm 3.1
    src = ("let c, n = clip_by_global_norm((3, [4.0]), 1.0)\nprint(c, n, global_norm(c))\n"
           "let d, m = clip_by_global_norm((3, 4, \"s\", true), 1.0)\nprint(d, m)")
    assert run(src) == "(0.6, [0.8]) 5.0 1.0\n(0.6, 0.8, \"s\", true) 5.0\n"


def test_zip_takes_its_documented_parameter_names(run):
    # SPEC 5 names zip(a, b) and says keyword arguments work for builtins alike
    src = "print(zip(a=(1,), b=(2,)))\nprint(zip((1,), b=(2,)))\nprint(zip((1, 2), (3, 4), (5, 6)))\nprint(zip((1,)))"
    assert run(src) == "((1, 2),)\n((1, 2),)\n((1, 3, 5), (2, 4, 6))\n((1,),)\n"


def test_shape_operations_keep_a_mask_a_mask(run):
    # numpy: reshape, transpose and where of bools are bools; a float "mask" indexed as a gather
    src = ("let x = [10.0, 20.0, 30.0]\nlet m = x > 15.0\n"
           "print(x[reshape(m, (3,))], x[transpose(m)])\n"
           "print(reshape(m, (3, 1)), where(m, m, false), where(m, 1.0, m))")
    assert run(src) == ("[20.0, 30.0] [20.0, 30.0]\n"
                        "[[false], [true], [true]] [false, true, true] [0.0, 1.0, 1.0]\n")


def test_reductions_over_a_non_empty_axis_of_an_empty_tensor_are_empty(run, run_error):
    # numpy: max(zeros((0, 3)), axis=1) is an empty result; only reducing an empty axis is undefined
    src = ("print(max(zeros((0, 3)), axis=1), min(zeros((2, 0)), axis=0), mean(zeros((0, 3)), axis=1), "
           "logsumexp(zeros((0, 3)), axis=1))")
    assert run(src) == "[] [] [] []\n"
    for bad in ("max(zeros((0, 3)), axis=0)", "mean(zeros((0, 3)))", "min(zeros((2, 0)), axis=1)"):
        assert run_error(f"print({bad})").kind == "value"


def test_cross_entropy_reads_a_tuple_of_class_indices_as_a_tensor(run, run_error):
    src = ("print(cross_entropy([[2.0, 1.0], [0.5, 2.5]], (0, 1)) == "
           "cross_entropy([[2.0, 1.0], [0.5, 2.5]], [0.0, 1.0]))")
    assert run(src) == "true\n"
    err = run_error("print(cross_entropy([[2.0, 1.0]], ((0.5, 0.5),)))")
    assert err.kind == "type" and "tuple of numbers" in err.message


def test_tree_map_refuses_structs_of_different_types(run, run_error):
    # SPEC 3: P(1.0) == Q(1.0) is false; they are different structures to tree_map too
    assert run("struct P {w}\nprint(tree_map(fn(a, b) => a + b, P(1.0), P(2.0)))") == "P(w=3.0)\n"
    err = run_error("struct P {w}\nstruct Q {w}\nprint(tree_map(fn(a, b) => a + b, P(1.0), Q(2.0)))")
    assert err.kind == "value" and "(P vs Q)" in err.message


@pytest.mark.parametrize("src, want", [
    ("print(type(reshape([1.0, 2.0] > 1.0, (2, 1))[1, 0]))", "bool\n"),
])
def test_an_element_of_a_reshaped_mask_is_still_a_bool(run, src, want):
    assert run(src) == want


def test_a_bad_operand_of_not_is_pointed_at_as_for_and_and_or(run_error):
    # SPEC 7: the caret marks the offending expression; `and`/`or` pointed at the operand already
    err = run_error("if not [1.0, 2.0] { }")
    assert err.kind == "shape" and (err.line, err.column) == (1, 8)
    err = run_error("print(not 5)")
    assert err.kind == "type" and (err.line, err.column) == (1, 11)


def test_an_error_under_hessian_shows_one_hessian_frame(run_error):
    # SPEC 7: errors come with the dg call stack; hessian's inner gradient added a second frame
    err = run_error("fn q(x) { return x[9] }\nprint(hessian(q)([1.0]))", "h.dg")
    frames = [line for line in str(err).splitlines() if line.strip().startswith("= in")]
    assert frames == ["  = in q", "  = in hessian(q), called at h.dg:2:7"]
