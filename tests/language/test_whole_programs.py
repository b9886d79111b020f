"""Whole programs (realistic scripts mixing many features) against the reference.

Each test names the reference sentence (or the decision) it holds dg to; a few keep a whole
program, with its expected output computed independently (numpy or by hand).
"""

import textwrap


def test_tree_map_mismatch_shows_a_one_key_map_as_a_one_tuple(run_error):
    # SPEC 3: tuples print as `(1,)`. optim.sgd with a gradient map missing a key said
    # `a map with keys ("a", "b") vs a map with keys ("a")`, which reads as a string, not a tuple.
    err = run_error(textwrap.dedent("""\
        import optim
        let p = {"a": [1.0, 2.0], "b": 1.0}
        let q = optim.sgd(p, {"a": [1.0, 2.0]}, 0.1)
    """))
    assert err.kind == "value"
    assert '(a map with keys ("a", "b") vs a map with keys ("a",))' in err.message


def test_check_reports_a_top_level_name_read_before_its_let(dg, tmp_path):
    # SPEC 8: `dg check` "parses and resolves names without running; it reports every error it
    # finds". `print(x)` before `let x = 1` (and `let z = z + 1`) always fails when run, with
    # "'x' is used before its definition runs", but check hoisted the name and said nothing.
    src = textwrap.dedent("""\
        print(x)
        let x = 1
        fn f() { return y }
        let y = 2
        print(f())
        let z = z + 1
        let z = z + 1
        print(later())
        fn later() { return S(1) }
        struct S { a }
        if true { let w = 1 }
        print(w)
    """)
    (tmp_path / "prog.dg").write_text(src)
    res = dg("check", "prog.dg", cwd=tmp_path)
    assert res.returncode == 1
    assert res.stderr.count("error[") == 3
    assert "error[name]: 'x' is used before its definition runs\n --> prog.dg:1:7" in res.stderr
    assert "error[name]: 'z' is used before its definition runs\n --> prog.dg:6:9" in res.stderr
    assert "error[name]: 'w' is not defined\n  --> prog.dg:12:7" in res.stderr
    assert res.stderr.endswith("3 errors found\n")
    run = dg("run", "prog.dg", cwd=tmp_path)
    assert run.returncode == 1 and "'x' is used before its definition runs" in run.stderr


def test_check_accepts_top_level_reads_after_the_let_and_inside_functions(dg, tmp_path):
    # The other side of the check above: reads after the `let`, in functions (which run later),
    # in loops after the `let`, and of re-declared names are all fine.
    src = textwrap.dedent("""\
        import optim as o
        let n = 3
        fn total() { return n + later }
        let later = 4
        let acc = 0
        for i in range(n) { acc += i }
        let n = n + 1
        let g = fn() => later * 2
        print(total(), acc, n, g(), o.sgd(1.0, 1.0, 0.5))
    """)
    (tmp_path / "prog.dg").write_text(src)
    assert dg("check", "prog.dg", cwd=tmp_path).stdout == "ok: 1 file checked\n"
    assert dg("run", "prog.dg", cwd=tmp_path).stdout == "8 3 4 8 0.5\n"


def test_syntax_errors_after_fn_and_between_struct_fields_say_what_was_expected(run_error):
    # SPEC 7: "A syntax error says what was expected in words". `fn x => x` said "expected an
    # operator after 'fn'" and `struct P { x y }` "expected the end of the statement (a line
    # break or ';') after 'x'", neither of which is what the parser wanted.
    err = run_error("let f = fn x => x")
    assert (err.kind, err.message) == ("syntax", "expected '(' after 'fn', found 'x'")
    err = run_error("struct P { x y }")
    assert err.message == "expected ',', '}' or a line break after 'x', found 'y'"
    assert (err.span.line, err.span.column) == (1, 14)
    err = run_error('let m = {"a": 1 "b": 2}')
    assert err.message == "expected ',' or '}' after '1', found '\"b\"'"


def test_a_ragged_bracket_literal_suggests_a_tuple(run_error):
    # SPEC 3: "every element must be a number or a tensor, all of one shape ... Anything else is
    # an error that suggests a tuple." A ragged literal, the usual slip of a Python user, gave
    # a shape error with no suggestion.
    for src in ("let rows = [[1.0, 2.0], [3.0]]", "let r = [1.0, [2.0]]", "let r = [[[1.0], [2.0, 3.0]]]"):
        err = run_error(src)
        assert err.kind == "shape" and "must all have one shape" in err.message
        assert err.hint == "use a tuple (a, b, ...) to group values of different shapes"
        assert "= help: use a tuple (a, b, ...)" in str(err)


def test_a_utf8_bom_at_the_start_of_a_file_is_not_source(dg, tmp_path):
    # SPEC 8 runs and checks files; an editor that saves UTF-8 with a byte-order mark (Notepad
    # does) made every script fail with "unexpected character '\ufeff'" at 1:1. Python skips it.
    (tmp_path / "helper.dg").write_bytes("\ufefflet K = 5\n".encode())
    (tmp_path / "main.dg").write_bytes('\ufeffimport helper\nprint("bom", helper.K)\n'.encode())
    res = dg("run", "main.dg", cwd=tmp_path)
    assert (res.returncode, res.stdout, res.stderr) == (0, "bom 5\n", "")
    assert dg("check", "main.dg", cwd=tmp_path).stdout == "ok: 1 file checked\n"
