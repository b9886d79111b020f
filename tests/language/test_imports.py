"""SPEC section 4 `import`: search order (beside the file, then stdlib/), run once, aliases, cycles."""

import io

import pytest

import dsl
from dsl.errors import DgError
from dsl.base.resources import stdlib_dir


def write(root, files):
    """Create files {relative path: text} under root."""
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


def run_file(path, **kw):
    """Run a file in a fresh interpreter; return its output."""
    out = io.StringIO()
    dsl.Interpreter(stdout=out, **kw).run_file(path)
    return out.getvalue()


def file_error(path):
    """Run a file that must fail; return the DgError."""
    with pytest.raises(DgError) as info:
        dsl.Interpreter(stdout=io.StringIO()).run_file(path)
    return info.value.settle()


def test_import_module_beside_the_file(tmp_path):
    write(tmp_path, {"helper.dg": "let k = 3\nfn triple(x) { return x * k }\n",
                     "main.dg": "import helper\nprint(helper.triple(2), helper.k)\n"})
    assert run_file(tmp_path / "main.dg") == "6 3\n"


def test_import_alias(tmp_path):
    write(tmp_path, {"helper.dg": "let k = 3\n",
                     "main.dg": "import helper as h\nprint(h.k)\n"})
    assert run_file(tmp_path / "main.dg") == "3\n"


def test_alias_does_not_bind_the_module_name(tmp_path):
    write(tmp_path, {"helper.dg": "let k = 3\n",
                     "main.dg": "import helper as h\nprint(helper.k)\n"})
    assert file_error(tmp_path / "main.dg").kind == "name"


def test_import_standard_library_from_anywhere(tmp_path):
    names = sorted(p.stem for p in stdlib_dir().glob("*.dg"))
    assert "nn" in names and "optim" in names
    write(tmp_path, {"main.dg": "import nn\nimport optim\nprint(type(nn), type(nn.linear), type(optim.sgd))\n"})
    assert run_file(tmp_path / "main.dg") == "module function function\n"


def test_file_beside_shadows_standard_library(tmp_path):
    write(tmp_path, {"nn.dg": 'let who = "local nn"\n',
                     "main.dg": "import nn\nprint(nn.who)\n"})
    assert run_file(tmp_path / "main.dg") == "local nn\n"


def test_standard_library_used_when_no_local_file(tmp_path, monkeypatch):
    lib = tmp_path / "fake_stdlib"
    write(lib, {"mathy.dg": 'let where_from = "stdlib"\n'})
    monkeypatch.setattr("dsl.runtime.interpreter.stdlib_dir", lambda: lib)
    write(tmp_path, {"app/main.dg": "import mathy\nprint(mathy.where_from)\n"})
    assert run_file(tmp_path / "app" / "main.dg") == "stdlib\n"
    write(tmp_path, {"app/mathy.dg": 'let where_from = "beside"\n'})
    assert run_file(tmp_path / "app" / "main.dg") == "beside\n"


def test_search_is_relative_to_the_importing_file_not_the_cwd(tmp_path, monkeypatch):
    write(tmp_path, {"lib/a.dg": "import b\nlet v = b.v\n", "lib/b.dg": 'let v = "lib/b"\n',
                     "b.dg": 'let v = "top b"\n', "lib/main.dg": "import a\nprint(a.v)\n"})
    monkeypatch.chdir(tmp_path)
    assert run_file(tmp_path / "lib" / "main.dg") == "lib/b\n"


def test_module_runs_once_per_interpreter(tmp_path):
    write(tmp_path, {"noisy.dg": 'print("loading noisy")\nlet n = 1\n',
                     "other.dg": "import noisy\nlet m = noisy.n + 1\n",
                     "main.dg": "import noisy\nimport other\nimport noisy as again\nprint(other.m, again.n)\n"})
    assert run_file(tmp_path / "main.dg") == "loading noisy\n2 1\n"


def test_module_runs_again_in_a_new_interpreter(tmp_path):
    write(tmp_path, {"noisy.dg": 'print("loading")\n', "main.dg": "import noisy\n"})
    assert run_file(tmp_path / "main.dg") == "loading\n"
    assert run_file(tmp_path / "main.dg") == "loading\n"


def test_module_functions_use_their_own_globals(tmp_path):
    write(tmp_path, {"m.dg": "let scale = 10\nfn f(x) { return x * scale }\n",
                     "main.dg": "import m\nlet scale = 1000\nprint(m.f(2))\n"})
    assert run_file(tmp_path / "main.dg") == "20\n"


def test_module_names_need_the_prefix(tmp_path):
    write(tmp_path, {"m.dg": "let secret = 1\n", "main.dg": "import m\nprint(secret)\n"})
    err = file_error(tmp_path / "main.dg")
    assert err.kind == "name" and err.line == 2


def test_module_structs_and_functions(tmp_path):
    write(tmp_path, {"shapes.dg": "struct Pt { x, y }\nfn origin() { return Pt(0, 0) }\n",
                     "main.dg": "import shapes\nlet p = shapes.Pt(1, 2)\nprint(p, shapes.origin(), type(p))\n"})
    assert run_file(tmp_path / "main.dg") == "Pt(x=1, y=2) Pt(x=0, y=0) Pt\n"


def test_missing_attribute_of_module(tmp_path):
    write(tmp_path, {"m.dg": "let a = 1\n", "main.dg": "import m\nprint(m.b)\n"})
    err = file_error(tmp_path / "main.dg")
    assert err.kind == "name" and (err.line, err.column) == (2, 7)
    assert "'b'" in err.message


def test_missing_module_is_import_error(tmp_path):
    write(tmp_path, {"main.dg": 'print("start")\nimport does_not_exist\n'})
    err = file_error(tmp_path / "main.dg")
    assert err.kind == "import"
    assert (err.line, err.column) == (2, 1)
    assert "does_not_exist" in err.message


def test_import_cycle_is_an_error(tmp_path):
    write(tmp_path, {"a.dg": "import b\nlet x = 1\n", "b.dg": "import a\nlet y = 2\n",
                     "main.dg": "import a\n"})
    err = file_error(tmp_path / "main.dg")
    assert err.kind == "import"
    assert "cycle" in err.message
    assert "a.dg -> b.dg -> a.dg" in err.message
    assert err.filename.endswith("b.dg") and err.line == 1


def test_self_import_is_a_cycle(tmp_path):
    write(tmp_path, {"selfish.dg": "import selfish\n", "main.dg": "import selfish\n"})
    err = file_error(tmp_path / "main.dg")
    assert err.kind == "import" and "cycle" in err.message


def test_main_file_importing_itself_is_a_cycle(tmp_path):
    write(tmp_path, {"main.dg": 'import main\nprint("hi")\n'})
    err = file_error(tmp_path / "main.dg")
    assert err.kind == "import" and "main.dg -> main.dg" in err.message


def test_syntax_error_in_module_names_the_module(tmp_path):
    write(tmp_path, {"broken.dg": "let x = (1,\n", "main.dg": "import broken\n"})
    err = file_error(tmp_path / "main.dg")
    assert err.kind == "syntax"
    assert err.filename.endswith("broken.dg")


def test_runtime_error_in_module_body(tmp_path):
    write(tmp_path, {"bad.dg": "let a = 1\nlet b = a / 0\n", "main.dg": "import bad\n"})
    err = file_error(tmp_path / "main.dg")
    assert err.kind == "value"
    assert err.filename.endswith("bad.dg") and err.line == 2


def test_failed_import_can_be_retried_after_fix(tmp_path):
    write(tmp_path, {"m.dg": "let a = 1 / 0\n"})
    out = io.StringIO()
    interp = dsl.Interpreter(stdout=out)
    main = tmp_path / "main.dg"
    main.write_text("import m\nprint(m.a)\n")
    with pytest.raises(DgError) as info:
        interp.run_file(main)
    assert info.value.kind == "value" and info.value.filename.endswith("m.dg")
    (tmp_path / "m.dg").write_text("let a = 5\n")
    interp.run_file(main)
    assert out.getvalue() == "5\n"        # the fixed module ran: the failed one was not kept


def test_import_from_source_string_uses_the_working_directory(tmp_path, monkeypatch):
    write(tmp_path, {"here.dg": "let v = 42\n"})
    monkeypatch.chdir(tmp_path)
    out = io.StringIO()
    dsl.Interpreter(stdout=out).run("import here\nprint(here.v)", "<string>")
    assert out.getvalue() == "42\n"


def test_import_inside_function(tmp_path):
    write(tmp_path, {"m.dg": "let v = 7\n",
                     "main.dg": "fn get() {\n  import m\n  return m.v\n}\nprint(get())\n"})
    assert run_file(tmp_path / "main.dg") == "7\n"


def test_module_value_prints(tmp_path):
    write(tmp_path, {"m.dg": "let v = 7\n", "main.dg": "import m\nprint(m)\n"})
    assert run_file(tmp_path / "main.dg") == "<module m>\n"
