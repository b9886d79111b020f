"""The language against its reference (sections 2-9): values, statements, builtins, tools and the
standard library where a sentence of the reference is easy to get wrong.

Each test names the reference sentence (or the decision) it holds dg to.
"""


def test_custom_vjp_single_argument_accepts_a_one_tuple(run):
    # SPEC 6: bwd returns "one gradient per argument"; JAX users write (g,) for one argument.
    src = ("let f = custom_vjp(fn(x) => x * 2.0, fn(x, out, g) => (g * 10.0,))\n"
           "print(grad(f)(1.0))\n"
           "let h = custom_vjp(fn(t) => t[0] * t[1], fn(t, out, g) => ((g * t[1], g * t[0]),))\n"
           "print(grad(h)((2.0, 3.0)))")
    assert run(src) == "10.0\n(3.0, 2.0)\n"


def test_custom_vjp_tuple_argument_keeps_its_tuple_gradient(run):
    # A single tuple argument's gradient is itself a tuple: a 1-tuple must not be unwrapped.
    src = ("let f = custom_vjp(fn(t) => t[0] * 3.0, fn(t, out, g) => (g * 3.0,))\n"
           "print(grad(f)((1.0,)))")
    assert run(src) == "(3.0,)\n"


def test_stacking_bool_tensors_keeps_bools(run):
    # SPEC 3: bool tensors come from comparisons; a literal of them stays bool at every depth, as in numpy.
    src = ("print([[true, false]], [[1.0] > 0, [2.0] > 5])\n"
           "print(stack(([true], [false])), cat(([true], [false])))\n"
           "print([[true], [1.0]], type([[true]]))")
    assert run(src) == ("[[true, false]] [[true], [false]]\n"
                        "[[true], [false]] [true, false]\n"
                        "[[1.0], [1.0]] tensor\n")


def test_tree_map_structure_error_names_the_keys(run_error):
    # A mismatch between params and grads should say how the maps differ, not "map vs map".
    err = run_error('print(tree_map(fn(a, b) => a + b, {"a": 1.0}, {"w": 1.0}))')
    assert err.kind == "value"
    assert '("a",)' in err.message and '("w",)' in err.message     # the keys as a tuple prints


def test_pow_base_gradient_at_zero_exponent_is_zero(run):
    # SPEC 6.7 (no NaN from a zero) and JAX: d/dx x**0 is 0 everywhere, also at x = 0.
    src = ("print(grad(fn(x, y) => x ** y, argnums=(0, 1))(0.0, 0.0))\n"
           "print(grad(fn(x) => sum(x ** [0.0, 1.0, 2.0]))([0.0, 0.0, 3.0]))\n"
           "print(grad(fn(x, y) => x ** y, argnums=(0, 1))(2.0, 3.0))")
    assert run(src) == "(0.0, 0.0)\n[0.0, 1.0, 6.0]\n(12.0, 5.545177444479562)\n"


def test_cross_entropy_of_a_perfect_fit_prints_zero_not_minus_zero(run):
    # SPEC 6.6: stable for logits of +-1000; the loss of a perfect prediction is 0.0.
    src = ("print(cross_entropy([[1000.0, -1000.0]], [0]))\n"
           "print(cross_entropy([[1000.0, -1000.0]], [[1.0, 0.0]]))")
    assert run(src) == "0.0\n0.0\n"


def test_custom_vjp_checks_the_gradient_of_a_structured_argument(run_error, run):
    # decisions.md: bwd must return a gradient shaped like each argument; a tuple, map or struct
    # argument (one Parameter on the tape) used to take any answer silently, misaligned.
    for bwd in ("(g, g, g)", "([1.0, 2.0], g)"):
        err = run_error(f"let h = custom_vjp(fn(t) => t[0] * t[1], fn(t, out, g) => {bwd})\n"
                        "print(grad(h)((2.0, 3.0)))")
        assert err.kind == "grad"
    err = run_error('let h = custom_vjp(fn(m) => m["a"], fn(m, out, g) => {"b": g})\n'
                    'print(grad(h)({"a": 2.0}))')
    assert err.kind == "grad" and "structure" in err.message
    assert run("struct S { a, n }\n"
               "let k = custom_vjp(fn(t, x) => t.a * x, fn(t, x, out, g) => (S(g * x, none), g * t.a))\n"
               "print(grad(k, argnums=(0, 1))(S(2.0, 3), 5.0))") == "(S(a=5.0, n=none), 2.0)\n"


def test_clip_by_global_norm_takes_max_by_keyword(run):
    # SPEC 5 names the signature clip_by_global_norm(tree, max); the keyword was max_norm.
    assert run('print(clip_by_global_norm({"a": [3.0, 4.0]}, max=10.0))') == '({"a": [3.0, 4.0]}, 5.0)\n'


def test_grad_wrt_int_error_shows_the_value_in_dg_form(run_error):
    # SPEC 6.5: differentiating w.r.t. an int is an error suggesting a float literal. The value
    # was shown through Python's repr of the whole conditional: "an int ('3')", "a bool (True)".
    err = run_error("print(grad(fn(x, n) => x * n, argnums=(0, 1))(2.0, 3))")
    assert err.kind == "grad" and "which is an int (3)" in err.message and "3.0" in err.hint
    err = run_error("print(grad(fn(b) => 1.0)(true))")
    assert err.kind == "grad" and "a bool (true)" in err.message
    err = run_error("print(grad(fn(m) => sum(where(m, 1.0, 0.0)))([true, false]))")
    assert "a bool tensor of shape (2,)" in err.message


def test_dg_check_reports_a_module_that_cannot_be_found(dg, tmp_path):
    # SPEC 8: `dg check` parses and resolves names without running; an import that names no
    # module is such a name (it passed as "ok" before), reported with the other errors.
    (tmp_path / "helper.dg").write_text("let k = 1\n")
    (tmp_path / "main.dg").write_text('import helper\nimport nosuchmod\nimport nn\nprint(undefined_q)\n')
    done = dg("check", "main.dg", cwd=tmp_path)
    assert done.returncode == 1
    assert "error[import]: no module named 'nosuchmod'" in done.stderr
    assert "'undefined_q' is not defined" in done.stderr and "2 errors found" in done.stderr
    assert done.stderr.index("nosuchmod") < done.stderr.index("undefined_q")    # in source order
    (tmp_path / "good.dg").write_text("import helper\nimport optim\nprint(helper.k)\n")
    assert dg("check", "good.dg", cwd=tmp_path).returncode == 0


def test_error_in_an_imported_module_shows_where_it_was_imported(dg, tmp_path):
    # SPEC 7: errors show the dg call stack; an import is part of it (the location alone points
    # into the module, with no hint of which import ran it).
    (tmp_path / "fb.dg").write_text('fn bad(x) {\n  return x - "s"\n}\nlet v = bad(1)\n')
    (tmp_path / "main.dg").write_text("print(1)\nimport fb\n")
    done = dg("run", "main.dg", cwd=tmp_path)
    assert done.returncode == 1 and done.stdout == "1\n"
    lines = done.stderr.splitlines()
    assert lines[0] == "error[type]: cannot subtract int and string"
    assert lines[-2].endswith("= in bad, called at " + str(tmp_path / "fb.dg") + ":4:9")
    assert lines[-1].endswith("= in module fb, imported at main.dg:2:1")


def test_a_script_importing_itself_is_a_cycle_before_running_twice(dg, tmp_path):
    # SPEC 4: an import cycle is an error. The main script was not on the import stack, so its
    # top level ran a second time as a module before the cycle was noticed one import later.
    (tmp_path / "a.dg").write_text('print("top")\nimport b\n')
    (tmp_path / "b.dg").write_text('import a\n')
    done = dg("run", "a.dg", cwd=tmp_path)
    assert done.returncode == 1 and done.stdout == "top\n"
    assert "error[import]: import cycle: a.dg -> b.dg -> a.dg" in done.stderr
    assert " --> " + str(tmp_path / "b.dg") + ":1:1" in done.stderr


def test_messages_use_the_right_article_and_dg_type_names(run_error):
    # Messages said "a int has no length", "cannot iterate over a int", "for a str".
    assert run_error("print(len(3))").message == "an int has no length"
    assert run_error("for c in 5 { }").message == "cannot iterate over an int"
    assert run_error("print(1(2))").message == "an int cannot be called"
    assert run_error("let x = [1.0]; x[0] = none").message == "cannot store none in a tensor"
    assert run_error('print(f"{"a":d}")').message.startswith("bad format spec 'd' for a string")


def test_bad_argnums_is_shown_in_dg_form(run_error):
    # The message showed Python's repr: "got (0, 'a')", "got True".
    assert run_error('print(grad(fn(x) => x, argnums=(0, "a"))(1.0))').message.endswith('got (0, "a")')
    assert run_error("print(grad(fn(x) => x, argnums=true)(1.0))").message.endswith("got true")
