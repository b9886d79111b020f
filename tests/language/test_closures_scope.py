"""SPEC sections 3-4: closures capture lexically, per-iteration loop variables, scope rules, recursion."""


# ---------------------------------------------------------------- capturing
def test_closure_captures_argument(run):
    src = "fn make_adder(n) { return fn(x) => x + n }\nlet add5 = make_adder(5)\nlet add1 = make_adder(1)\nprint(add5(1), add1(1))"
    assert run(src) == "6 2\n"


def test_closure_sees_later_rebinding_in_its_scope(run):
    src = "fn mk() {\n let c = 0\n let read = fn() => c\n c = 10\n return read\n}\nprint(mk()())"
    assert run(src) == "10\n"


def test_closures_from_different_calls_are_independent(run):
    src = ("fn counter(start) {\n let n = start\n return fn() => n\n}\n"
           "let a = counter(1)\nlet b = counter(2)\nprint(a(), b(), a())")
    assert run(src) == "1 2 1\n"


def test_closures_in_for_loop_capture_each_iteration(run):
    src = "let fs = ()\nfor i in range(3) { fs = fs + (fn() => i * 10,) }\nprint(fs[0](), fs[1](), fs[2]())"
    assert run(src) == "0 10 20\n"


def test_closures_in_for_loop_with_destructuring(run):
    src = "let fs = ()\nfor a, b in zip((1, 2), (10, 20)) { fs = fs + (fn() => a + b,) }\nprint(fs[0](), fs[1]())"
    assert run(src) == "11 22\n"


def test_closures_over_let_in_while_body_capture_each_iteration(run):
    src = ("let fs = ()\nlet j = 0\nwhile j < 3 {\n let k = j\n fs = fs + (fn() => k,)\n j += 1\n}\n"
           "print(fs[0](), fs[1](), fs[2]())")
    assert run(src) == "0 1 2\n"


def test_closures_in_loop_inside_function(run):
    src = ("fn make() {\n let out = ()\n for i in range(3) {\n  let sq = i * i\n  out = out + (fn(x) => x + sq,)\n }\n"
           " return out\n}\nlet fs = make()\nprint(fs[0](1), fs[1](1), fs[2](1))")
    assert run(src) == "1 2 5\n"


def test_closure_captures_parameter_of_outer_function_inside_loop(run):
    src = ("fn scale_all(k) {\n let fs = ()\n for i in range(2) { fs = fs + (fn(x) => x * k + i,) }\n return fs\n}\n"
           "let fs = scale_all(10)\nprint(fs[0](1), fs[1](1))")
    assert run(src) == "10 11\n"


def test_nested_closures_three_levels(run):
    src = "fn a(x) { return fn(y) { return fn(z) => x + y + z } }\nprint(a(1)(10)(100))"
    assert run(src) == "111\n"


def test_closure_reads_module_global_current_value(run):
    assert run("let g = 1\nfn read() { return g }\ng = 2\nprint(read())") == "2\n"


def test_closure_value_semantics_of_captured_map(run):
    src = 'let m = {"a": 1}\nlet get_a = fn() => m["a"]\nlet copy = m\ncopy["a"] = 5\nprint(get_a(), copy["a"])'
    assert run(src) == "1 5\n"


def test_lambda_passed_as_argument_captures(run):
    src = "fn apply(f, x) { return f(x) }\nfn go(k) { return apply(fn(v) => v * k, 3) }\nprint(go(4))"
    assert run(src) == "12\n"


# ---------------------------------------------------------------- rebinding outer variables is an error
def test_function_cannot_assign_enclosing_function_variable(run_error):
    src = "fn counter() {\n let n = 0\n return fn() { n += 1\n return n }\n}\nlet c = counter()\nc()"
    err = run_error(src)
    assert err.kind == "name"
    assert "'n'" in err.message
    assert (err.line, err.column) == (3, 16)


def test_function_cannot_assign_module_variable(run_error):
    err = run_error("let t = 0\nfn f() { t = 1 }\nf()")
    assert err.kind == "name"
    assert (err.line, err.column) == (2, 10)


def test_function_cannot_update_field_of_outer_variable(run_error):
    err = run_error("struct P { x }\nlet p = P(1)\nfn f() { p.x = 2 }\nf()")
    assert err.kind == "name"


def test_function_may_shadow_outer_name_with_let(run):
    assert run("let t = 0\nfn f() { let t = 5\n t += 1\n return t }\nprint(f(), t)") == "6 0\n"


def test_parameters_are_local_and_assignable(run):
    assert run("let x = 1\nfn f(x) { x = x * 100\n return x }\nprint(f(2), x)") == "200 1\n"


def test_check_reports_outer_assignment_statically():
    import dsl
    errors = dsl.Interpreter().check("let t = 0\nfn f() { t = 1 }\n", "m.dg")
    assert [e.kind for e in errors] == ["name"]
    assert errors[0].line == 2


# ---------------------------------------------------------------- scopes
def test_block_scope_inside_function(run_error):
    err = run_error("fn f() {\n if true { let y = 1 }\n return y\n}\nf()")
    assert err.kind == "name" and err.line == 3


def test_undefined_name_fails_when_the_line_runs(run):
    # an undefined name in a function that is never called does not stop the program
    assert run("fn never() { return nope }\nprint(1)") == "1\n"


def test_undefined_name_error_has_location(run_error):
    err = run_error("print(1)\nprint(undefined_thing)")
    assert err.kind == "name"
    assert (err.line, err.column) == (2, 7)
    assert "undefined_thing" in err.message


def test_name_used_before_its_let_runs(run_error):
    err = run_error("fn f() { return later }\nprint(f())\nlet later = 1")
    assert err.kind == "name"
    assert err.line == 1


def test_builtins_can_be_shadowed(run):
    assert run("let sum = fn(x) => 42\nprint(sum([1.0]))") == "42\n"


def test_builtin_shadowed_locally_only(run):
    assert run("fn f() { let max = 3\n return max }\nprint(f(), max([1.0, 2.0]))") == "3 2.0\n"


# ---------------------------------------------------------------- recursion and declaration order
def test_fib_recursion(run):
    src = "fn fib(n) {\n if n < 2 { return n }\n return fib(n - 1) + fib(n - 2)\n}\nprint(fib(20))"
    assert run(src) == "6765\n"


def test_factorial_big_int(run):
    src = "fn fact(n) { if n <= 1 { return 1 } return n * fact(n - 1) }\nprint(fact(25))"
    assert run(src) == "15511210043330985984000000\n"


def test_top_level_functions_call_each_other_in_any_order(run):
    src = "print(a(3))\nfn a(n) { return b(n) + 1 }\nfn b(n) { return n * 2 }"
    assert run(src) == "7\n"


def test_mutual_recursion_top_level(run):
    src = ("fn is_even(n) { if n == 0 { return true } return is_odd(n - 1) }\n"
           "fn is_odd(n) { if n == 0 { return false } return is_even(n - 1) }\n"
           "print(is_even(10), is_odd(7), is_even(7))")
    assert run(src) == "true true false\n"


def test_local_function_recursion(run):
    src = "fn outer(n) {\n fn down(k) { if k == 0 { return 0 } return 1 + down(k - 1) }\n return down(n)\n}\nprint(outer(50))"
    assert run(src) == "50\n"


def test_recursive_lambda_through_let_at_top_level(run):
    src = "let f = fn(n) { if n == 0 { return 1 } return n * f(n - 1) }\nprint(f(5))"
    assert run(src) == "120\n"


def test_recursion_depth_900_is_fine(run):
    src = "fn deep(n) { if n == 0 { return 0 } return 1 + deep(n - 1) }\nprint(deep(900))"
    assert run(src) == "900\n"


def test_runaway_recursion_is_limit_error(run_error):
    err = run_error("fn f(n) { return f(n + 1) }\nf(0)")
    assert err.kind == "limit"
    assert err.line == 1


def test_recursion_limit_configurable(run_error):
    err = run_error("fn deep(n) { if n == 0 { return 0 } return 1 + deep(n - 1) }\nprint(deep(60))", max_depth=50)
    assert err.kind == "limit"


def test_recursive_closure_over_struct(run):
    src = ("struct Node { value, children }\n"
           "fn total(n) {\n let s = n.value\n for c in n.children { s += total(c) }\n return s\n}\n"
           "let tree = Node(1, (Node(2, ()), Node(3, (Node(4, ()),))))\nprint(total(tree))")
    assert run(src) == "10\n"


def test_closures_over_a_while_counter_share_one_binding(run):
    # only `for` (and `let` inside a body) binds afresh; a counter declared outside is one variable
    src = "let fs = ()\nlet i = 0\nwhile i < 3 {\n fs = fs + (fn() => i,)\n i += 1\n}\nprint(fs[0](), fs[2]())"
    assert run(src) == "3 3\n"


def test_loop_variable_reassigned_in_body_is_seen_by_that_iterations_closure(run):
    src = "let fs = ()\nfor i in range(2) {\n let f = fn() => i\n i = i + 100\n fs = fs + (f,)\n}\nprint(fs[0](), fs[1]())"
    assert run(src) == "100 101\n"
