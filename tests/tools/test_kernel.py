"""The Jupyter kernel, tested as Jupyter uses it: a real kernel process driven by jupyter_client."""

import json
import subprocess
import sys
import time

import pytest

jupyter_client = pytest.importorskip("jupyter_client")
pytest.importorskip("ipykernel")

from jupyter_client.kernelspec import KernelSpecManager  # noqa: E402
from jupyter_client.manager import KernelManager  # noqa: E402

from dsl.kernel import name_at, split_commands, tensor_html  # noqa: E402

TIMEOUT = 60


@pytest.fixture(scope="module")
def kernels_dir(tmp_path_factory):
    """`python -m dsl.kernel install --prefix DIR`, as a user would run it."""
    prefix = tmp_path_factory.mktemp("prefix")
    done = subprocess.run([sys.executable, "-m", "dsl.kernel", "install", "--prefix", str(prefix)],
                          capture_output=True, text=True, timeout=TIMEOUT)
    assert done.returncode == 0, done.stderr
    assert "installed the dg kernel" in done.stdout
    return prefix / "share" / "jupyter" / "kernels"


def test_install_writes_a_kernel_spec_that_runs_this_python(kernels_dir):
    spec = json.loads((kernels_dir / "dg" / "kernel.json").read_text())
    assert spec["argv"][:3] == [sys.executable, "-m", "dsl.kernel"] and spec["language"] == "dg"


def test_install_refuses_an_unknown_option():
    done = subprocess.run([sys.executable, "-m", "dsl.kernel", "install", "--everywhere"],
                          capture_output=True, text=True, timeout=TIMEOUT)
    assert done.returncode == 2 and "unknown option --everywhere" in done.stderr


@pytest.fixture(scope="module")
def kernel(kernels_dir):
    """A running dg kernel and a client connected to it."""
    km = KernelManager(kernel_name="dg", kernel_spec_manager=KernelSpecManager(kernel_dirs=[str(kernels_dir)]))
    km.start_kernel()
    kc = km.client()
    kc.start_channels()
    kc.wait_for_ready(timeout=TIMEOUT)
    yield km, kc
    kc.stop_channels()
    km.shutdown_kernel(now=True)


def execute(kc, code, interrupt_on=None, km=None):
    """Run a cell; return (reply content, [(msg_type, content)] of its iopub messages).
    With `interrupt_on`, interrupt the kernel once the cell has printed that text (so the
    interrupt lands inside the running code however slowly the machine starts it)."""
    msg_id = kc.execute(code)
    outputs = []
    idle = False
    if interrupt_on is not None:
        while interrupt_on not in "".join(c.get("text", "") for t, c in outputs if t == "stream"):
            msg = kc.get_iopub_msg(timeout=TIMEOUT)
            if msg["parent_header"].get("msg_id") == msg_id and msg["msg_type"] not in ("status", "execute_input"):
                outputs.append((msg["msg_type"], msg["content"]))
        time.sleep(0.2)
        km.interrupt_kernel()
    reply = kc.get_shell_msg(timeout=TIMEOUT)
    while reply["parent_header"].get("msg_id") != msg_id:
        reply = kc.get_shell_msg(timeout=TIMEOUT)
    while not idle:
        msg = kc.get_iopub_msg(timeout=TIMEOUT)
        if msg["parent_header"].get("msg_id") != msg_id:
            continue
        if msg["msg_type"] == "status" and msg["content"]["execution_state"] == "idle":
            idle = True
        elif msg["msg_type"] not in ("status", "execute_input"):
            outputs.append((msg["msg_type"], msg["content"]))
    return reply["content"], outputs


def streamed(outputs, name="stdout"):
    """The text a cell wrote to one stream."""
    return "".join(c["text"] for t, c in outputs if t == "stream" and c["name"] == name)


def test_state_is_kept_across_cells_and_values_show_readably(kernel):
    _, kc = kernel
    reply, _ = execute(kc, "let w = [[1.0, 2.0], [3.0, 4.0]]\nfn f(x) { return sum(x * x) }")
    assert reply["status"] == "ok"
    reply, outputs = execute(kc, 'print("f is", f(w))\nw * 2')
    assert reply["status"] == "ok"
    assert streamed(outputs) == "f is 30.0\n"
    [data] = [c["data"] for t, c in outputs if t == "display_data"]
    assert data["text/plain"] == "[[2.0, 4.0], [6.0, 8.0]]"
    assert "tensor (2, 2)" in data["text/html"] and "<td>8.0</td>" in data["text/html"]


def test_a_dg_error_shows_with_its_caret_and_no_python_traceback(kernel):
    _, kc = kernel
    reply, outputs = execute(kc, "let a = 1\nlet b = a + sofmax")
    assert reply["status"] == "error" and reply["ename"] == "DgError"
    [err] = [c for t, c in outputs if t == "error"]
    text = "\n".join(err["traceback"])
    plain = __import__("re").sub(r"\x1b\[[0-9;]*m", "", text)
    assert plain.startswith("error[name]: 'sofmax' is not defined")
    assert "^^^^^^" in plain and "did you mean 'softmax'?" in plain
    assert "Traceback" not in plain and ".py" not in plain
    reply, _ = execute(kc, "a + 1")       # the session goes on
    assert reply["status"] == "ok"


def test_complete_and_inspect(kernel):
    _, kc = kernel
    execute(kc, "import nn\nstruct Linear { weight, bias }\nlet layer = Linear(1.0, 2.0)")
    kc.complete("let y = sof", 11)
    reply = kc.get_shell_msg(timeout=TIMEOUT)["content"]
    assert reply["status"] == "ok" and "softmax" in reply["matches"] and reply["cursor_start"] == 8
    kc.complete("layer.we", 8)
    assert kc.get_shell_msg(timeout=TIMEOUT)["content"]["matches"] == ["weight"]
    kc.complete("nn.li", 5)
    assert "linear" in kc.get_shell_msg(timeout=TIMEOUT)["content"]["matches"]
    kc.inspect("grad(", 5)
    reply = kc.get_shell_msg(timeout=TIMEOUT)["content"]
    assert reply["found"] and reply["data"]["text/plain"].startswith("grad(f, argnums=0, has_aux=false): ")
    kc.inspect("nn.linear(3, 4)", 5)
    reply = kc.get_shell_msg(timeout=TIMEOUT)["content"]
    assert reply["found"] and reply["data"]["text/plain"].startswith('fn linear(n_in, n_out, init="he", dtype="float64")')
    kc.inspect("nothing_here", 3)
    assert kc.get_shell_msg(timeout=TIMEOUT)["content"]["found"] is False


def test_tape_and_commands_in_a_cell(kernel):
    _, kc = kernel
    reply, outputs = execute(kc, "let g = grad(fn(x) => sum(sin(x) * x))([1.0, 2.0])\n:tape")
    assert reply["status"] == "ok"
    text = streamed(outputs)
    assert "Sin" in text and "Mul" in text and "Sum" in text
    svg = [c["data"] for t, c in outputs if t == "display_data" and "image/svg+xml" in c["data"]]
    from shutil import which
    assert bool(svg) == (which("dot") is not None)      # a picture exactly when Graphviz is there
    reply, outputs = execute(kc, ":type g")
    assert streamed(outputs) == "tensor (2,)\n"


def test_progress_bars_update_in_place(kernel):
    _, kc = kernel
    reply, outputs = execute(kc, 'let s = 0\nfor i in progress(range(50), "train") { s += i }\nprint(s)')
    assert reply["status"] == "ok" and streamed(outputs) == "1225\n"
    bar = streamed(outputs, "stderr")
    assert bar.startswith("\rtrain") and "50/50" in bar and "100%" in bar     # redrawn with \r in place


def test_plot_shows_a_png_below_the_cell(kernel):
    pytest.importorskip("matplotlib")
    _, kc = kernel
    reply, outputs = execute(kc, 'plot((3.0, 2.0, 1.5, 1.2), title="loss")')
    assert reply["status"] == "ok"
    [png] = [c["data"]["image/png"] for t, c in outputs if t == "display_data" and "image/png" in c["data"]]
    import base64
    assert base64.b64decode(png)[:8] == b"\x89PNG\r\n\x1a\n"


def test_an_interrupt_stops_the_cell_with_one_line_and_the_next_cell_runs(kernel):
    km, kc = kernel
    reply, outputs = execute(kc, 'let n = 0\nprint("looping")\nwhile true { n += 1 }', interrupt_on="looping", km=km)
    assert reply["status"] == "error"
    [err] = [c for t, c in outputs if t == "error"]
    assert len(err["traceback"]) == 1 and "interrupted" in err["traceback"][0]
    assert "Traceback" not in streamed(outputs, "stderr") and streamed(outputs) == "looping\n"
    reply, outputs = execute(kc, "n > 0")
    assert reply["status"] == "ok"
    assert [c["data"]["text/plain"] for t, c in outputs if t == "display_data"] == ["true"]


def test_is_complete(kernel):
    _, kc = kernel
    kc.is_complete("fn f(x) {")
    assert kc.get_shell_msg(timeout=TIMEOUT)["content"]["status"] == "incomplete"
    kc.is_complete("let x = 1")
    assert kc.get_shell_msg(timeout=TIMEOUT)["content"]["status"] == "complete"


# ---------------------------------------------------------------- the parts, without a process
def test_a_cell_splits_into_code_and_command_lines():
    assert split_commands("let x = 1\n:type x\nx + 1") == ["let x = 1", ":type x", "x + 1"]
    assert split_commands('let s = "a\n:b"') == ['let s = "a\n:b"']     # unfinished code keeps the line


def test_the_name_under_the_cursor():
    assert name_at("y = nn.linear(3)", 9) == "nn.linear"
    assert name_at("grad(", 5) == "grad"
    assert name_at("  ", 1) == ""


def test_tensor_html_has_the_shape_and_every_entry():
    import numpy as np
    html = tensor_html(np.array([1.0, 2.5]))
    assert "tensor (2,)" in html and html.count("<td>") == 2 and "<td>2.5</td>" in html


# ---------------------------------------------------------------- the %%dg magic
def test_interrupting_a_dg_magic_cell_shows_one_line_not_a_traceback():
    km = KernelManager(kernel_name="python3")
    km.start_kernel(extra_arguments=["--HistoryManager.enabled=False"])
    kc = km.client()
    kc.start_channels()
    try:
        kc.wait_for_ready(timeout=TIMEOUT)
        reply, _ = execute(kc, "%load_ext dsl.ipython")
        assert reply["status"] == "ok"
        reply, outputs = execute(kc, '%%dg\nlet n = 0\nprint("looping")\nwhile true { n += 1 }',
                                 interrupt_on="looping", km=km)
        assert reply["status"] == "error"
        [err] = [c for t, c in outputs if t == "error"]
        plain = "\n".join(err["traceback"])
        assert "interrupted" in plain and "Traceback" not in plain and len(err["traceback"]) == 1
        reply, outputs = execute(kc, "%dg n > 0")
        assert reply["status"] == "ok"
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)


def test_the_tape_picture_comes_from_graphviz_when_dot_is_installed(tmp_path, monkeypatch):
    from dsl.kernel import dot_svg
    fake = tmp_path / "dot"
    fake.write_text('#!/bin/sh\n[ "$1" = "-Tsvg" ] || exit 3\nn=0\nwhile read -r line; do n=$((n+1)); done\nprintf "<svg>%s</svg>" "$n"\n')
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", str(tmp_path))
    assert dot_svg("digraph tape {\n a -> b\n}\n") == "<svg>3</svg>"
    monkeypatch.setenv("PATH", str(tmp_path / "nowhere"))
    assert dot_svg("digraph tape {}") is None


def test_reset_forgets_the_names_and_the_notebook_hooks_stay(kernel):
    _, kc = kernel
    execute(kc, "let forgotten = 1")
    reply, outputs = execute(kc, ":reset\nforgotten")
    assert reply["status"] == "error" and "the session is reset" in streamed(outputs)
    reply, outputs = execute(kc, 'for i in progress(range(3), "after") { }')
    assert reply["status"] == "ok" and "after: 100%" in streamed(outputs, "stderr")


def _reply_to(kc, msg_type, content):
    """Send a raw request on the shell channel; return the content of its reply."""
    msg = kc.session.msg(msg_type, content)
    kc.shell_channel.send(msg)
    reply = kc.get_shell_msg(timeout=TIMEOUT)
    while reply["parent_header"].get("msg_id") != msg["header"]["msg_id"]:
        reply = kc.get_shell_msg(timeout=TIMEOUT)
    return reply["content"]


def test_every_request_gets_a_reply_even_a_malformed_one(kernel):
    _, kc = kernel
    execute(kc, "let caf = 1.0")
    # a client counting UTF-16 units sends a cursor past the end of a cell with an emoji
    reply = _reply_to(kc, "inspect_request", {"code": 'print("😀")\ncaf', "cursor_pos": 40, "detail_level": 0})
    assert reply["status"] == "ok"
    reply = _reply_to(kc, "inspect_request", {"code": "grad", "cursor_pos": -3, "detail_level": 0})
    assert reply["status"] == "ok"
    reply = _reply_to(kc, "complete_request", {"code": "ca", "cursor_pos": 99})
    assert reply["status"] == "ok" and "caf" in reply["matches"]
    reply = _reply_to(kc, "inspect_request", {"code": None, "cursor_pos": 0, "detail_level": 0})
    assert reply["status"] == "error"
    reply = _reply_to(kc, "execute_request", {"code": 42, "silent": False, "store_history": True,
                                              "user_expressions": {}, "allow_stdin": False})
    assert reply["status"] == "error" and "must be a string" in reply["evalue"]
    reply, _ = execute(kc, "caf + 1.0")      # the kernel goes on
    assert reply["status"] == "ok"
