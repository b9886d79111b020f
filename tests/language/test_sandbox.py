"""The sandbox for embedding: a dg program reaches nothing of its host but what the interpreter
grants (docs/security.md). No Python object or attribute leaks through a builtin, a field read,
an index or a format spec; file access can be switched off or confined to directories, and
`..`, absolute paths and symlinks cannot lead out of them.
"""

import io
import os
import threading

import numpy as np
import pytest

import dsl
from dsl.errors import DgError
from dsl.base.sandbox import FileAccess

PRELUDE = """import nn
struct S { a, b }
let s = S(1.0, 2.0)
fn f(x) { return x }
let x = 1.5
let t = ones((2,))
let m = {"a": 1}
"""

ESCAPES = [
    "x.__class__", "type(x).__mro__", "type(x).__class__", "f.__globals__", "f.__code__", "f.code", "f.cells",
    "f.__call__", "(fn(y) => y).__closure__", "print.__self__", "print.__name__", "print.__globals__",
    "exp.__wrapped__", "load.__module__", "grad(f).__wrapped__", "grad(f).call", "nn.__dict__", "nn.cells",
    "nn.path", "nn.__name__", "S.__init__", "S.fields", "S.__call__", "s.__dict__", "s.__class__", "s.sdef",
    "s.vals", "s._asdict", "s._fields", "s._name", "t.T", "t.shape", "t.__array__", "t.dtype", "m.keys",
    '"s".upper', "(1,).count", "range(3).start", "batches(ones((4, 2)), ones((4,)), 2).x",
    "progress(range(2)).__iter__", "custom_vjp(f, f).__closure__", "true.__class__", "none.__class__",
    'f"{x:__class__}"', 'f"{x.__class__}"', 'f"{x!a}"', 'f"{x!r:__class__}"', 'f"{s.__dict__}"', 'nn["mse"]', 's["a"]',
    'm["__class__"]', "t[\"a\"]", "getattr", "__import__", "eval", "exec", "open", "globals", "__builtins__",
    "dsl", "os", "sys", "interpreter", "interp.__globals__", "self", "_",
]


@pytest.mark.parametrize("expr", ESCAPES)
def test_no_python_object_or_attribute_is_reachable(expr):
    with pytest.raises(DgError) as info:
        dsl.Interpreter(stdout=io.StringIO()).run(PRELUDE + f"let leak = {expr}\n", "escape.dg")
    assert info.value.kind in ("type", "key", "name", "value", "syntax", "index"), str(info.value)
    assert info.value.line == PRELUDE.count("\n") + 1


def test_functions_modules_and_structs_print_without_python_details(run):
    out = run(PRELUDE + "print(print, f, nn, S, exp, grad(f), range(2), str(load))")
    assert out == "<fn print> <fn f> <module nn> <struct S> <fn exp> <fn grad(f)> range(0, 2) <fn load>\n"
    assert "0x" not in out and "Python" not in out
    # an f-string's !r is dg's own printing, not Python's repr
    out = run(PRELUDE + 'print(f"{print!r} {f!r} {nn!r} {S!r} {s!r} {range(2)!r} {load!s}")')
    assert out == "<fn print> <fn f> <module nn> <struct S> S(a=1.0, b=2.0) range(0, 2) <fn load>\n"


def test_a_module_exposes_only_its_top_level_names(run):
    assert run("import nn\nprint(type(nn.mse), type(nn.linear))") == "function function\n"


def test_builtins_take_no_hidden_source_location_argument():
    # primitives have a `span` parameter (their source location) that a program must not set
    for src in ("reshape(ones((4,)), (4,), span=1)", "exp(1.0, 5)",
                "grad(fn(x) => sum(exp(x, ones((2,)))))(ones((2,)))"):
        with pytest.raises(DgError) as info:
            dsl.Interpreter().run(src)
        assert info.value.kind == "type", src


def test_a_struct_with_a_field_called_span_still_works(run):
    assert run("struct P { span }\nfn g(span) { return span }\nprint(P(span=1), g(span=2))") == "P(span=1) 2\n"


# ---------------------------------------------------------------- the file policy
@pytest.fixture
def tree(tmp_path):
    """An allowed directory with data, a module and escapes, next to a secret outside it."""
    allowed = tmp_path / "allowed"
    (allowed / "sub").mkdir(parents=True)
    secret = tmp_path / "secret"
    secret.mkdir()
    (secret / "key.csv").write_text("a\n42\n")
    (secret / "mod.dg").write_text("let value = 42\n")
    (allowed / "data.csv").write_text("a,b\n1,2\n")
    (allowed / "sub" / "more.csv").write_text("a\n7\n")
    (allowed / "helper.dg").write_text("let value = 7\n")
    (allowed / "link.csv").symlink_to(secret / "key.csv")
    (allowed / "linkdir").symlink_to(secret)
    (allowed / "mod.dg").symlink_to(secret / "mod.dg")
    dsl.Interpreter().run(f'save("{secret / "w.ckpt"}", 1.0)')
    return allowed, secret


def confined(allowed, src, filename=None, files=None, cwd=None):
    """Run `src` as a script inside `allowed` with files=[allowed]; return (printed, DgError or None)."""
    out = io.StringIO()
    interp = dsl.Interpreter(stdout=out, files=[allowed] if files is None else files)
    old = os.getcwd()
    os.chdir(cwd or allowed)
    try:
        interp.run(src, str(filename or allowed / "main.dg"))
    except DgError as err:
        return out.getvalue(), err
    finally:
        os.chdir(old)
    return out.getvalue(), None


def refused(allowed, src, **kwargs):
    """The limit error of a file access the policy refuses."""
    _, err = confined(allowed, src, **kwargs)
    assert err is not None, f"{src} was allowed"
    assert err.kind == "limit", str(err)
    assert err.line is not None and "file access" in str(err) or "outside the directories" in err.message
    return err


def test_files_inside_the_allowed_directory_can_be_read_and_written(tree):
    allowed, _ = tree
    out, err = confined(allowed, 'print(load_csv("data.csv"), load_csv("sub/more.csv"))\n'
                                 'save("out.ckpt", {"w": 1.0})\nprint(load("out.ckpt"))\n'
                                 f'print(load_csv("{allowed / "data.csv"}"))\n'
                                 'import helper\nprint(helper.value)\n')
    assert err is None, str(err)
    assert out == '[[1.0, 2.0]] [[7.0]]\n{"w": 1.0}\n[[1.0, 2.0]]\n7\n'
    assert (allowed / "out.ckpt").exists()


@pytest.mark.parametrize("path", ["../secret/key.csv", "sub/../../secret/key.csv", "{secret}/key.csv",
                                  "link.csv", "linkdir/key.csv", "/etc/passwd", "~/.bashrc"])
def test_reading_outside_the_allowed_directory_is_refused(tree, path):
    allowed, secret = tree
    path = path.format(secret=secret)
    err = refused(allowed, f'load_csv("{path}")')
    assert "outside the directories this program may use" in err.message
    refused(allowed, f'load("{path}")')


@pytest.mark.parametrize("path", ["../secret/new.ckpt", "{secret}/new.ckpt", "linkdir/new.ckpt",
                                  "sub/../../new.ckpt", "/tmp/dg-escape.ckpt"])
def test_writing_outside_the_allowed_directory_is_refused(tree, path):
    allowed, secret = tree
    path = path.format(secret=secret)
    refused(allowed, f'save("{path}", 1.0)')
    assert not (secret / "new.ckpt").exists() and not (allowed.parent / "new.ckpt").exists()
    assert not os.path.exists("/tmp/dg-escape.ckpt")


def test_saving_over_a_symlink_that_points_outside_is_refused(tree):
    allowed, secret = tree
    (allowed / "trap.ckpt").symlink_to(secret / "w.ckpt")
    refused(allowed, 'save("trap.ckpt", 2.0)')
    assert dsl.Interpreter().run(f'load("{secret / "w.ckpt"}")') == 1.0


def test_an_import_cannot_reach_a_module_outside(tree):
    allowed, secret = tree
    # mod.dg in the allowed directory is a symlink to the secret one: not importable
    _, err = confined(allowed, "import mod")
    assert err.kind == "import" and "no module named 'mod'" in err.message
    # a script outside the allowed directories cannot import modules beside it
    _, err = confined(allowed, "import mod", filename=secret / "main.dg")
    assert err.kind == "import" and str(secret) not in err.message


def test_files_none_switches_every_file_access_off_but_the_standard_library(tree):
    allowed, _ = tree
    for src in ('load_csv("data.csv")', 'load("x.ckpt")', 'save("x.ckpt", 1)'):
        err = refused(allowed, src, files="none")
        assert "file access is off for this program" in err.message
    _, err = confined(allowed, "import helper", files="none")
    assert err.kind == "import"
    out, err = confined(allowed, "import nn\nimport optim\nprint(nn.mse(1.0, 3.0))", files="none")
    assert (out, err) == ("4.0\n", None)
    assert not (allowed / "x.ckpt").exists()


def test_files_all_is_the_default_and_changes_nothing(tree):
    allowed, secret = tree
    out, err = confined(allowed, f'print(load_csv("{secret / "key.csv"}"))', files="all")
    assert (out, err) == ("[[42.0]]\n", None)
    out = io.StringIO()
    dsl.Interpreter(stdout=out).run(f'print(load_csv("{secret / "key.csv"}"))')
    assert out.getvalue() == "[[42.0]]\n"


def test_an_allowed_directory_reached_through_a_symlink_works(tree, tmp_path):
    allowed, _ = tree
    alias = tmp_path / "alias"
    alias.symlink_to(allowed)
    out, err = confined(alias, 'print(load_csv("data.csv"))', files=[alias])
    assert (out, err) == ("[[1.0, 2.0]]\n", None)


def test_the_policy_belongs_to_each_interpreter_even_when_nested(tree):
    allowed, secret = tree
    outer = dsl.Interpreter(stdout=io.StringIO(), files="none")
    inner = dsl.Interpreter(stdout=io.StringIO(), files="all")
    outer.define("peek", lambda: inner.run(f'load_csv("{secret / "key.csv"}")')[0, 0])
    outer.run("let v = peek()")                  # the host's own interpreter may read
    assert outer.get("v") == 42.0
    with pytest.raises(DgError) as info:        # ... and afterwards the outer one still may not
        outer.run(f'load_csv("{secret / "key.csv"}")')
    assert info.value.kind == "limit"


def test_concurrent_interpreters_in_threads_keep_their_own_policies(tree):
    allowed, secret = tree
    results = {}

    def work(name, files):
        interp = dsl.Interpreter(stdout=io.StringIO(), files=files)
        got = []
        for _ in range(30):
            try:
                got.append(float(interp.run(f'load_csv("{secret / "key.csv"}")')[0, 0]))
            except DgError as err:
                got.append(err.kind)
        results[name] = got

    threads = [threading.Thread(target=work, args=("open", "all")),
               threading.Thread(target=work, args=("closed", "none"))]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert results["open"] == [42.0] * 30 and results["closed"] == ["limit"] * 30


def test_bad_policies_are_python_errors_for_the_host():
    for bad in ("everything", "/tmp", 3, None):
        with pytest.raises(TypeError):
            dsl.Interpreter(files=bad)
    assert repr(FileAccess(["/tmp"])).startswith("FileAccess([")


def test_the_command_line_takes_files(dg, tree):
    allowed, secret = tree
    script = allowed / "main.dg"
    script.write_text(f'print(load_csv("data.csv"))\nprint(load_csv("{secret / "key.csv"}"))\n')
    proc = dg("run", "--files", str(allowed), str(script), cwd=str(allowed))
    assert proc.returncode == 1 and proc.stdout == "[[1.0, 2.0]]\n"
    assert proc.stderr.startswith(f"error[limit]: cannot read {secret / 'key.csv'}: it is outside")
    proc = dg("--files", "none", "-c", 'load_csv("data.csv")', cwd=str(allowed))
    assert proc.returncode == 1 and "file access is off" in proc.stderr
    proc = dg("--files", f"{secret}{os.pathsep}{allowed}", "run", str(script), cwd=str(allowed))
    assert proc.returncode == 0 and proc.stdout == "[[1.0, 2.0]]\n[[42.0]]\n"


def test_host_functions_are_the_only_way_out(tree):
    allowed, secret = tree
    interp = dsl.Interpreter(stdout=io.StringIO(), files="none")
    interp.define("read_secret", lambda: float(np.loadtxt(secret / "key.csv", skiprows=1)))
    assert interp.run("read_secret()") == 42.0         # granted by the host, on purpose


def test_print_separators_are_shown_as_dg_values_not_python_reprs(run):
    assert run('print(1, 2, sep=ones((2,)), end="!\\n")') == "1[1.0, 1.0]2!\n"


def test_host_values_that_contain_themselves_are_dg_errors_not_recursion_errors():
    interp = dsl.Interpreter(stdout=io.StringIO())
    loop = []
    loop.append(loop)
    deep = 1.0
    for _ in range(100_000):
        deep = [deep]
    for value in (loop, {"a": loop}, deep):
        with pytest.raises(DgError) as info:
            interp.set("x", value)
        assert info.value.kind == "limit"
    interp.run("fn f(a) { return a }\nlet t = 1.0\nfor i in range(100000) { t = (t,) }")
    with pytest.raises(DgError) as info:
        interp.function("f")(loop)
    assert info.value.kind == "limit"
    with pytest.raises(DgError) as info:
        interp.get("t")
    assert info.value.kind == "limit"
