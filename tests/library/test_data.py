"""Data builtins: load_csv, batches, one_hot, train_test_split (SPEC section 9)."""

import time

import numpy as np
import pytest

import dsl


def ev(src, interp=None, filename="<test>"):
    """Run dg source and return the value of its last expression."""
    return (interp or dsl.Interpreter()).run(src, filename)


CSV = "x,y,label\n1.5,2,0\n-3,4.25,1\n\n5,6e-1,1\n"


@pytest.fixture
def csv_file(tmp_path):
    """A small CSV file with a header and a blank line."""
    path = tmp_path / "small.csv"
    path.write_text(CSV)
    return path


# ---------------------------------------------------------------- load_csv
def test_load_csv_gives_a_tensor_without_the_header(csv_file):
    out = ev(f'load_csv("{csv_file}")')
    np.testing.assert_array_equal(out, [[1.5, 2.0, 0.0], [-3.0, 4.25, 1.0], [5.0, 0.6, 1.0]])
    assert out.dtype == np.float64


def test_load_csv_columns_gives_a_map_in_header_order(csv_file):
    out = ev(f'load_csv("{csv_file}", columns=true)')
    assert list(out) == ["x", "y", "label"]
    np.testing.assert_array_equal(out["y"], [2.0, 4.25, 0.6])


def test_load_csv_without_header(tmp_path):
    path = tmp_path / "plain.csv"
    path.write_text("1,2\n3,4\n")
    np.testing.assert_array_equal(ev(f'load_csv("{path}", header=false)'), [[1.0, 2.0], [3.0, 4.0]])
    cols = ev(f'load_csv("{path}", header=false, columns=true)')
    assert list(cols) == [0, 1] and list(cols[1]) == [2.0, 4.0]


def test_load_csv_relative_path_uses_the_working_directory(csv_file, monkeypatch):
    monkeypatch.chdir(csv_file.parent)
    assert ev('shape(load_csv("small.csv"))') == (3, 3)


def test_load_csv_relative_path_falls_back_to_the_scripts_directory(tmp_path, monkeypatch):
    (tmp_path / "proj" / "data").mkdir(parents=True)
    (tmp_path / "proj" / "data" / "d.csv").write_text("a\n1\n2\n")
    script = tmp_path / "proj" / "run.dg"
    script.write_text('let t = load_csv("data/d.csv")\n')
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    interp = dsl.Interpreter()
    interp.run_file(script)
    np.testing.assert_array_equal(interp.lookup("t"), [[1.0], [2.0]])


@pytest.mark.parametrize("text, words", [
    ("a,b\n1,2\n3\n", ["line 3", "1 values", "2"]),
    ("a,b\n1,2\n3,oops\n", ["line 3", "'b'", "oops", "not a number"]),
    ("a,b\n1,\n2,NA\n", ["line 3", "'b'", "'NA'", "not a number"]),
    ("", ["empty"]),
    ("a,a\n1,2\n", ["'a'", "twice"]),
])
def test_load_csv_bad_files_are_value_errors(tmp_path, run_error, text, words):
    path = tmp_path / "bad.csv"
    path.write_text(text)
    err = run_error(f'load_csv("{path}")')
    assert err.kind == "value"
    for w in words:
        assert w in err.message


def test_load_csv_reads_an_empty_field_as_a_missing_value(tmp_path):
    # dg reads no text but numbers: a table with gaps could not be read at all, where numpy's
    # genfromtxt and pandas read nan, which isnan finds
    path = tmp_path / "gaps.csv"
    path.write_text("a,b,c\n1,,3\n , 2.5,\n4,5,6\n")
    out = ev(f'load_csv("{path}")')
    np.testing.assert_array_equal(np.isnan(out), [[False, True, False], [True, False, True], [False] * 3])
    assert out[0, 0] == 1.0 and out[1, 1] == 2.5 and list(out[2]) == [4.0, 5.0, 6.0]
    assert ev(f'sum(isnan(load_csv("{path}", columns=true)["c"]))') == 1


def test_load_csv_missing_file(run_error, tmp_path):
    err = run_error(f'load_csv("{tmp_path / "nope.csv"}")')
    assert err.kind == "value" and "nope.csv" in err.message


def test_load_csv_argument_types(run_error, csv_file):
    assert run_error("load_csv(3)").kind == "type"
    assert run_error(f'load_csv("{csv_file}", header=1)').kind == "type"


# ---------------------------------------------------------------- batches
def collect(src, interp=None):
    """Run a program that appends each batch to a tuple `got`; return got."""
    interp = interp or dsl.Interpreter()
    ev("let x = reshape(arange(20), (10, 2))\nlet y = arange(10) * 10\nlet got = ()\n" + src, interp)
    return interp.lookup("got")


def test_batches_cover_every_row_once_with_rows_kept_together():
    got = collect("seed(0)\nfor xb, yb in batches(x, y, 4) { got = got + ((xb, yb),) }")
    assert [len(xb) for xb, _ in got] == [4, 4, 2]
    xs = np.concatenate([xb for xb, _ in got])
    ys = np.concatenate([yb for _, yb in got])
    assert sorted(ys.tolist()) == [i * 10.0 for i in range(10)]
    np.testing.assert_array_equal(xs[:, 0], ys / 5)       # row i of x is (2i, 2i+1), y is 10i
    assert ys.tolist() != sorted(ys.tolist())             # shuffled


def test_batches_shuffle_is_reproducible_and_fresh_each_call():
    first = collect("seed(5)\nfor xb, yb in batches(x, y, 3) { got = got + (yb,) }")
    again = collect("seed(5)\nfor xb, yb in batches(x, y, 3) { got = got + (yb,) }")
    assert all(np.array_equal(a, b) for a, b in zip(first, again))
    two = collect("seed(5)\nfor e in range(2) { let order = ()\n"
                  "for xb, yb in batches(x, y, 10) { order = order + (yb,) }\ngot = got + order }")
    assert not np.array_equal(two[0], two[1])


def test_batches_without_shuffle_keep_order():
    got = collect("for xb, yb in batches(x, y, 3, shuffle=false) { got = got + (yb,) }")
    assert [b.tolist() for b in got] == [[0.0, 10.0, 20.0], [30.0, 40.0, 50.0], [60.0, 70.0, 80.0], [90.0]]


def test_batches_is_an_iterator():
    assert ev("type(batches(zeros((3, 1)), zeros((3,)), 2))") == "iterator"


@pytest.mark.parametrize("call, kind", [
    ("batches(zeros((3, 2)), zeros((4,)), 2)", "shape"),
    ("batches(zeros((3, 2)), zeros((3,)), 0)", "value"),
    ("batches(zeros((3, 2)), zeros((3,)), 1.5)", "type"),
    ("batches((1, 2), zeros((2,)), 1)", "type"),
    ("batches(zeros((3, 2)), zeros((3,)), 2, shuffle=1)", "type"),
])
def test_batches_argument_errors(run_error, call, kind):
    assert run_error(call).kind == kind


def test_batches_of_recorded_values_are_differentiable():
    g = ev("let x = [[1.0], [2.0], [3.0]]\n"
           "fn f(x) { let s = 0.0\n for xb, yb in batches(x, zeros((3,)), 2) { s = s + sum(xb * xb) }\n"
           " return s }\ngrad(f)(x)")
    np.testing.assert_allclose(g, [[2.0], [4.0], [6.0]])


# ---------------------------------------------------------------- one_hot
def test_one_hot_values_and_shape():
    np.testing.assert_array_equal(ev("one_hot([2, 0, 1], 3)"), np.eye(3)[[2, 0, 1]])
    assert ev("shape(one_hot(zeros((2, 5)), 4))") == (2, 5, 4)
    np.testing.assert_array_equal(ev("one_hot(1, 2)"), [0.0, 1.0])


@pytest.mark.parametrize("call, kind", [
    ("one_hot([0, 3], 3)", "index"),
    ("one_hot([-1], 3)", "index"),
    ("one_hot([0.5], 3)", "value"),
    ('one_hot("a", 3)', "type"),
    ("one_hot([1], 0)", "value"),
])
def test_one_hot_errors(run_error, call, kind):
    assert run_error(call).kind == kind


# ---------------------------------------------------------------- train_test_split
def test_train_test_split_partitions_the_rows_with_test_share_fraction():
    interp = dsl.Interpreter()
    ev("seed(2)\nlet x = reshape(arange(20), (10, 2))\nlet y = arange(10)\n"
       "let xtr, xte, ytr, yte = train_test_split(x, y, 0.25)", interp)
    xtr, xte, ytr, yte = (interp.lookup(n) for n in ("xtr", "xte", "ytr", "yte"))
    assert len(xte) == 3 and len(xtr) == 7            # ceil(0.25 * 10) test rows
    assert sorted(np.concatenate([ytr, yte]).tolist()) == list(range(10))
    np.testing.assert_array_equal(xtr[:, 0], ytr * 2)
    np.testing.assert_array_equal(xte[:, 0], yte * 2)
    assert ytr.tolist() != sorted(ytr.tolist()) or yte.tolist() != sorted(yte.tolist())


def test_train_test_split_is_reproducible():
    src = "seed(9)\ntrain_test_split(arange(50), arange(50), 0.2)"
    a, b = ev(src), ev(src)
    assert all(np.array_equal(p, q) for p, q in zip(a, b))


@pytest.mark.parametrize("fraction, kind", [("0.0", "value"), ("1.0", "value"), ("-0.5", "value"),
                                            ('"half"', "type"), ("0.99", "value")])
def test_train_test_split_bad_fraction(run_error, fraction, kind):
    assert run_error(f"train_test_split(arange(10), arange(10), {fraction})").kind == kind


def test_train_test_split_needs_matching_rows(run_error):
    assert run_error("train_test_split(arange(10), arange(9), 0.5)").kind == "shape"


def test_load_csv_with_a_hundred_thousand_columns_checks_its_header_at_once(tmp_path):
    # the duplicate-name check was quadratic: 100,000 columns ran for minutes
    path = tmp_path / "wide.csv"
    names = [f"c{i}" for i in range(100_000)]
    path.write_text(",".join(names) + "\n" + ",".join("1" for _ in names) + "\n")
    interp = dsl.Interpreter()
    start = time.process_time()
    assert interp.eval(f'shape(load_csv("{path}"))') == (1, 100_000)
    assert time.process_time() - start < 20         # a linear check takes well under a second
    path.write_text(",".join(names + ["c5"]) + "\n" + ",".join("1" for _ in range(100_001)) + "\n")
    with pytest.raises(dsl.DgError, match="'c5' appears twice"):
        interp.eval(f'load_csv("{path}")')


def test_load_csv_takes_memory_like_its_table_not_like_a_string_per_cell(tmp_path):
    import tracemalloc
    path = tmp_path / "column.csv"
    path.write_text("x\n" + "".join(f"{i * 0.001:.4f}\n" for i in range(200_000)))   # 1.4 MB
    size = path.stat().st_size
    interp = dsl.Interpreter()
    tracemalloc.start()
    try:
        table = interp.eval(f'load_csv("{path}")')
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert table.shape == (200_000, 1) and table[-1, 0] == 199.999
    assert peak < 6 * size, f"{peak:,} bytes at the peak for a file of {size:,}"     # was about 95 times


def test_reading_a_long_csv_stops_at_the_timeout_at_its_line(tmp_path):
    path = tmp_path / "long.csv"
    path.write_text("a,b\n" + "1.5,2.5\n" * 2_000_000)
    interp = dsl.Interpreter(timeout=0.3)
    with pytest.raises(dsl.DgError) as info:
        interp.run(f'let n = 1\nlet t = load_csv("{path}")\n', "long.dg")
    assert info.value.kind == "limit" and "seconds" in info.value.message and info.value.line == 2
