"""The tape itself (SPEC 6.2, 6.3, 6.10): node names in order, structural nodes with their slot
indices, spans, an iterative backward pass, and tapes that are freed."""

import gc
import tracemalloc

import numpy as np
import pytest

import dsl
from dsl.core import tape as T
from dsl.errors import DgError


def tape_of(src, keep=True):
    """Run dg source; return the node list of its last gradient computation."""
    interp = dsl.Interpreter(seed=0, keep_tape=keep)
    interp.run(src, "tape.dg")
    return interp.last_tape


def test_tape_records_ops_in_order_with_structural_nodes():
    nodes = tape_of("""
struct Linear { w, b }
fn loss(params, x) {
    let layer = params["out"]
    return sum(relu(x @ layer.w + layer.b))
}
let g = grad(loss)({"hidden": Linear(1.0, 2.0), "out": Linear([[1.0], [2.0]], [0.5])}, [[1.0, 2.0]])
""")
    ops = [n.op for n in nodes]
    assert ops == ["Parameter", "Input", "MapLookup", "StructField", "MatMul", "StructField", "Add",
                   "Relu", "Sum"]
    lookup = nodes[2]
    assert lookup.kw["key_index"] == 1 and lookup.kw["total_keys"] == 2 and lookup.parents[0] is nodes[0]
    w = nodes[3]
    assert w.kw["field_index"] == 0 and w.kw["total_fields"] == 2 and w.parents[0] is lookup
    b = nodes[5]
    assert b.kw["field_index"] == 1 and b.parents[0] is lookup
    assert nodes[4].parents == (nodes[1], w)


def test_nodes_keep_the_span_of_their_expression():
    nodes = tape_of("fn f(x) {\n  let y = x * x\n  return exp(y)\n}\nlet g = grad(f)(1.0)")
    mul = next(n for n in nodes if n.op == "Mul")
    exp = next(n for n in nodes if n.op == "Exp")
    assert (mul.span.line, mul.span.column, mul.span.end_column) == (2, 11, 16)
    assert (exp.span.line, exp.span.column) == (3, 10)
    assert mul.span.filename == "tape.dg"


SPEC_OPS = {
    "Add": "x + y", "Sub": "x - y", "Mul": "x * y", "Div": "x / y", "Neg": "-x", "MatMul": "m @ m",
    "Sum": "sum(x)", "Mean": "mean(x)", "ScalarMul": "2.0 * x", "Exp": "exp(x)", "Ln": "ln(x)",
    "Sin": "sin(x)", "Cos": "cos(x)", "Sqrt": "sqrt(x)", "Pow": "x ** y", "Sigmoid": "sigmoid(x)",
    "Relu": "relu(x)", "TanhAct": "tanh(x)", "Abs": "abs(x)", "Log2": "log2(x)",
    "Softmax": "softmax(x)", "CrossEntropy": "cross_entropy(m, [0.0, 1.0])", "LayerNorm": "layer_norm(m)",
    "BatchNorm": "batch_norm(m)", "Clamp": "clamp(x, 0.0, 1.0)", "Where": "where(x > 1.0, x, y)",
    "Reshape": "reshape(x, (2, 1))", "TransposeOp": "transpose(m)", "CatOp": "cat((x, y))",
    "GatherOp": "gather(x, [1.0, 0.0])", "Silu": "silu(x)", "Gelu": "gelu(x)", "Max": "max(x)",
    "Min": "min(x)", "Maximum": "maximum(x, y)", "Minimum": "minimum(x, y)",
    "LogSoftmax": "log_softmax(x)", "LogSumExp": "logsumexp(x)", "SsmScan": "ssm_scan(x, y, x)",
    "Index": "x[0]", "Stack": "stack((x, y))", "Mod": "x % y", "SetIndex": "set_first(x, y)",
}


@pytest.mark.parametrize("op,expr", sorted(SPEC_OPS.items()))
def test_every_gradop_appears_by_name(op, expr):
    src = f"""
fn set_first(a, b) {{ let c = a * 1.0
  c[0] = b[1]
  return c }}
fn f(x, y) {{ let m = [x, y] * 1.0
  return sum({expr}) }}
let g = grad(f, argnums=(0, 1))([1.5, 2.5], [0.5, 3.0])
"""
    assert op in [n.op for n in tape_of(src)]


def test_struct_and_tuple_reads_record_struct_field():
    nodes = tape_of("let g = grad(fn(t) => t[1] * 2.0)((1.0, 2.0, 3.0))")
    sf = [n for n in nodes if n.op == "StructField"]
    assert len(sf) == 1 and sf[0].kw["field_index"] == 1 and sf[0].kw["total_fields"] == 3


def test_backward_is_iterative_on_a_100000_node_tape():
    interp = dsl.Interpreter(keep_tape=False)
    interp.run("fn chain(x) { let y = x\n for i in range(100000) { y = y + x }\n return y }\n"
               "let g = grad(chain)(1.0)")
    assert interp.lookup("g") == 100001.0


def test_missing_rule_is_a_loud_error():
    interp = dsl.Interpreter(keep_tape=True)
    interp.run("fn f(x) { return exp(x) }")
    # all three come from one declaration
    saved = T.PULLBACKS.pop("Exp"), T.FLOAT_PULLBACKS.pop("Exp"), T.PLAIN_PULLBACKS.pop("Exp")
    try:
        with pytest.raises(DgError) as info:
            interp.run("let g = grad(f)(1.0)")
        assert info.value.kind == "grad" and "Exp" in info.value.message and "grad" in info.value.message
    finally:
        T.PULLBACKS["Exp"], T.FLOAT_PULLBACKS["Exp"], T.PLAIN_PULLBACKS["Exp"] = saved


def test_repeated_gradient_calls_do_not_grow_memory():
    interp = dsl.Interpreter(keep_tape=False)
    interp.run("seed(0)\nlet w = randn((20, 20))\nfn f(w) { return sum(tanh(w @ w)) }\nlet gf = grad(f)")
    gf, w = interp.lookup("gf"), interp.lookup("w")
    for _ in range(200):
        gf(w)
    gc.collect()
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    for _ in range(10000):
        gf(w)
    gc.collect()
    after = tracemalloc.get_traced_memory()[0]
    tracemalloc.stop()
    assert after - before < 200_000, f"memory grew by {after - before} bytes over 10,000 calls"


def test_kept_tape_is_only_the_last_one():
    interp = dsl.Interpreter(keep_tape=True)
    interp.run("let a = grad(fn(x) => sin(x))(1.0)\nlet b = grad(fn(x) => x * x * x)(1.0)")
    assert [n.op for n in interp.last_tape] == ["Parameter", "Mul", "Mul"]


def test_ops_on_inputs_alone_are_not_recorded():
    nodes = tape_of("let g = grad(fn(w, x) => sum(w * exp(x)))(2.0, [1.0, 2.0])")
    assert [n.op for n in nodes] == ["Parameter", "Input", "Mul", "Sum"]


def test_a_slot_read_twice_is_one_node_with_the_summed_gradient():
    interp = dsl.Interpreter(keep_tape=True)
    interp.run("struct P { w, b }\n"
               "fn f(p) { let t = 0.0\n for i in range(5) { t = t + p.w * p.w + p.b } return t }\n"
               "let m = {\"a\": 1.5, \"b\": 2.0}\n"
               "fn g(m) { return m[\"a\"] * m[\"a\"] * m[\"b\"] + m[\"a\"] }\n"
               "let gp = grad(f)(P(3.0, 1.0))\nlet gm = grad(g)(m)")
    gp = interp.lookup("gp")
    assert (gp.w, gp.b) == (30.0, 5.0)
    assert interp.lookup("gm") == {"a": 2 * 1.5 * 2.0 + 1.0, "b": 1.5 * 1.5}
    ops = [n.op for n in interp.last_tape]
    assert ops.count("MapLookup") == 2 and ops.count("Mul") == 2


def test_reads_inside_a_nested_gradient_record_on_their_own_tapes():
    interp = dsl.Interpreter(keep_tape=True)
    # the inner function reads q.w of the outer tape's struct on every call of the inner gradient
    interp.run("struct P { w }\n"
               "fn outer(q) { let inner = grad(fn(x) => x * q.w * q.w)\n return inner(2.0) * q.w + inner(3.0) }\n"
               "let g = grad(outer)(P(1.5))")
    # outer(q) = w^2 * w + w^2 = w^3 + w^2: d/dw = 3 w^2 + 2 w
    assert interp.lookup("g").w == pytest.approx(3 * 1.5 ** 2 + 2 * 1.5, rel=1e-12)
