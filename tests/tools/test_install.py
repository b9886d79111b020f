"""Both install modes find grammar/ and stdlib/ from any working directory.

A wheel carries them inside the package (dsl/_grammar, dsl/_stdlib); an editable install reads them
from the checkout. Each mode is installed into a throw-away virtual environment (no pip inside it:
the running pip installs into it with --python), and the project's run-time dependencies are made
visible through a .pth file, so they are never downloaded (only setuptools, for an isolated build
when the running one cannot build wheels).
"""

import importlib.util
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DEPS = ("lark", "numpy", "prompt_toolkit", "pygments", "wcwidth", "setuptools")
PROGRAM = ("import nn\nimport optim\nseed(0)\nlet layer = nn.linear(2, 3)\n"
           "print(type(layer), shape(layer.w), type(optim.sgd))\n")
EXPECTED = "Linear (2, 3) function\n"


def _run(cmd, cwd=None, timeout=180):
    """Run a command; fail the test with its output if it fails."""
    result = subprocess.run([str(c) for c in cmd], cwd=cwd, capture_output=True, text=True, timeout=timeout)
    assert result.returncode == 0, f"{cmd} failed:\n{result.stdout}\n{result.stderr}"
    return result


def _pip(*args, cwd=None):
    """The running interpreter's pip."""
    return _run([sys.executable, "-m", "pip", "--disable-pip-version-check", *args], cwd=cwd)


def _copy_source(dest):
    """A clean copy of what a build needs (never build inside the shared checkout)."""
    dest.mkdir(parents=True)
    for name in ("dsl", "grammar", "stdlib"):
        shutil.copytree(ROOT / name, dest / name, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, dest / name)
    return dest


def _dependency_dirs():
    """The directories the run-time (and build) dependencies are imported from."""
    dirs = {sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]}
    for name in DEPS:
        spec = importlib.util.find_spec(name)
        if spec is not None and spec.origin:
            dirs.add(str(Path(spec.origin).resolve().parent.parent))
    return sorted(dirs)


def _make_venv(where):
    """A new venv without pip, whose interpreter can import dg's dependencies; return its bin dir."""
    if pip_too_old():
        pytest.skip("pip >= 22.3 is needed to install into another environment (--python)")
    _run([sys.executable, "-m", "venv", "--without-pip", where])
    python = where / "bin" / "python"
    purelib = _run([python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"]).stdout.strip()
    Path(purelib, "dg_test_deps.pth").write_text("\n".join(_dependency_dirs()) + "\n")
    return where / "bin"


def pip_too_old():
    """Whether the running pip lacks --python."""
    import pip
    major, minor = (int(p) for p in pip.__version__.split(".")[:2])
    return (major, minor) < (22, 3)


def _build_flags():
    """Build offline with the running setuptools when it can build wheels; otherwise let pip isolate.

    setuptools before 70.1 needs the separate `wheel` package for bdist_wheel, and a fresh venv
    on Python 3.11 has such a setuptools without `wheel`.
    """
    if importlib.util.find_spec("setuptools") is None:
        return []
    from importlib.metadata import version
    major, minor = (int(p) for p in version("setuptools").split(".")[:2])
    if (major, minor) >= (70, 1) or importlib.util.find_spec("wheel") is not None:
        return ["--no-build-isolation"]
    return []


@pytest.fixture(scope="module")
def wheel_env(tmp_path_factory):
    """A venv with dg installed from a freshly built wheel; the source copy is deleted afterwards."""
    base = tmp_path_factory.mktemp("wheel")
    src = _copy_source(base / "src")
    _pip("wheel", src, "--no-deps", *_build_flags(), "-w", base / "dist", "-q")
    wheels = list((base / "dist").glob("dg_lang-*.whl"))
    assert len(wheels) == 1
    shutil.rmtree(src)               # nothing may fall back to a source tree
    bin_dir = _make_venv(base / "venv")
    _pip("--python", bin_dir / "python", "install", "--no-deps", "--no-index", "-q", wheels[0])
    return {"bin": bin_dir, "wheel": wheels[0], "cwd": tmp_path_factory.mktemp("elsewhere")}


@pytest.fixture(scope="module")
def editable_env(tmp_path_factory):
    """A venv with an editable install of a copy of the project."""
    base = tmp_path_factory.mktemp("editable")
    src = _copy_source(base / "src")
    bin_dir = _make_venv(base / "venv")
    # No --no-index: an isolated build (see _build_flags) must fetch setuptools; --no-deps keeps
    # the project's own dependencies from being downloaded.
    _pip("--python", bin_dir / "python", "install", "--no-deps", *_build_flags(), "-q", "-e", src)
    return {"bin": bin_dir, "src": src, "cwd": tmp_path_factory.mktemp("elsewhere")}


# ---------------------------------------------------------------- wheel
def test_wheel_carries_grammar_and_stdlib(wheel_env):
    import zipfile
    names = set(zipfile.ZipFile(wheel_env["wheel"]).namelist())
    assert "dsl/_grammar/dg.lark" in names
    for module in (ROOT / "stdlib").glob("*.dg"):
        assert f"dsl/_stdlib/{module.name}" in names


def test_wheel_install_runs_from_another_directory(wheel_env):
    result = _run([wheel_env["bin"] / "dg", "-c", PROGRAM], cwd=wheel_env["cwd"])
    assert result.stdout == EXPECTED


def test_wheel_install_python_dash_m(wheel_env):
    result = _run([wheel_env["bin"] / "python", "-m", "dsl", "-c", "print(1 + 1)"], cwd=wheel_env["cwd"])
    assert result.stdout == "2\n"


def test_wheel_install_uses_packaged_resources(wheel_env):
    code = ("import dsl, dsl.base.resources as r\n"
            "print(dsl.__file__)\nprint(r.grammar_path())\nprint(r.stdlib_dir())")
    lines = _run([wheel_env["bin"] / "python", "-c", code], cwd=wheel_env["cwd"]).stdout.splitlines()
    package = Path(lines[0]).parent
    assert "site-packages" in str(package)
    assert Path(lines[1]) == package / "_grammar" / "dg.lark"
    assert Path(lines[2]) == package / "_stdlib"


def test_wheel_install_runs_a_script_importing_local_and_stdlib(wheel_env):
    cwd = wheel_env["cwd"]
    (cwd / "proj").mkdir(exist_ok=True)
    (cwd / "proj" / "helper.dg").write_text("fn twice(x) { return 2 * x }\n")
    (cwd / "proj" / "main.dg").write_text("import helper\nimport nn\nprint(helper.twice(21), type(nn.mse))\n")
    result = _run([wheel_env["bin"] / "dg", "run", "proj/main.dg"], cwd=cwd)
    assert result.stdout == "42 function\n"
    assert _run([wheel_env["bin"] / "dg", "check", "proj/main.dg"], cwd=cwd).returncode == 0


# ---------------------------------------------------------------- editable
def test_editable_install_runs_from_another_directory(editable_env):
    result = _run([editable_env["bin"] / "dg", "-c", PROGRAM], cwd=editable_env["cwd"])
    assert result.stdout == EXPECTED


def test_editable_install_reads_the_checkout(editable_env):
    src = editable_env["src"]
    code = ("import dsl, dsl.base.resources as r\n"
            "print(dsl.__file__)\nprint(r.grammar_path())\nprint(r.stdlib_dir())")
    lines = _run([editable_env["bin"] / "python", "-c", code], cwd=editable_env["cwd"]).stdout.splitlines()
    assert Path(lines[0]) == src / "dsl" / "__init__.py"
    assert Path(lines[1]) == src / "grammar" / "dg.lark"
    assert Path(lines[2]) == src / "stdlib"


def test_editable_install_sees_new_stdlib_modules(editable_env):
    (editable_env["src"] / "stdlib" / "fresh_module.dg").write_text('let hello = "fresh"\n')
    result = _run([editable_env["bin"] / "dg", "-c", "import fresh_module\nprint(fresh_module.hello)"],
                  cwd=editable_env["cwd"])
    assert result.stdout == "fresh\n"


def test_development_venv_runs_from_another_directory(tmp_path):
    """The project's own environment (an editable install of this checkout)."""
    dg = Path(sys.executable).with_name("dg")
    if not dg.exists():
        pytest.skip("no dg script beside the running interpreter")
    result = _run([dg, "-c", PROGRAM], cwd=tmp_path)
    assert result.stdout == EXPECTED
    code = "import dsl.base.resources as r\nprint(r.grammar_path())\nprint(r.stdlib_dir())"
    lines = _run([sys.executable, "-c", code], cwd=tmp_path).stdout.splitlines()
    assert Path(lines[0]).is_file() and Path(lines[0]).name == "dg.lark"
    assert (Path(lines[1]) / "nn.dg").is_file()
