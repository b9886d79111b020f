"""plot: PNG files, notebook display, the errors a user can make, and the missing extra."""

import io
import subprocess
import sys

import numpy as np
import pytest

import dsl

PNG = b"\x89PNG\r\n\x1a\n"


def failure(src, **options):
    """The DgError a program stops with."""
    with pytest.raises(dsl.DgError) as info:
        dsl.Interpreter(stdout=io.StringIO(), **options).run(src)
    return info.value


@pytest.fixture(autouse=True)
def in_tmp(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    pytest.importorskip("matplotlib")
    return tmp_path


def picture(path):
    """The pixels of a PNG file."""
    from matplotlib import image
    return image.imread(str(path))


def test_a_path_gets_a_png_and_different_data_draw_differently(in_tmp):
    dsl.Interpreter().run('plot((3.0, 2.0, 1.0), path="a.png")\nplot((1.0, 2.0, 3.0), path="b.png")')
    a, b = (in_tmp / "a.png").read_bytes(), (in_tmp / "b.png").read_bytes()
    assert a[:8] == PNG and b[:8] == PNG
    assert not np.array_equal(picture(in_tmp / "a.png"), picture(in_tmp / "b.png"))


def test_xs_a_matrix_of_lines_labels_and_titles_are_drawn(in_tmp):
    dsl.Interpreter().run('plot(linspace(0.0, 1.0, 5), stack((ones(5), zeros(5)), axis=1), label=("a", "b"), '
                          'title="t", xlabel="x", ylabel="y", path="m.png")\n'
                          'plot(linspace(0.0, 1.0, 5), stack((ones(5), zeros(5)), axis=1), path="plain.png")')
    # the legend and the labels add ink: the two pictures differ only by them
    labelled, plain = picture(in_tmp / "m.png"), picture(in_tmp / "plain.png")
    assert labelled.shape == plain.shape and (labelled != plain).any()
    assert labelled[..., :3].mean() < plain[..., :3].mean()


def test_the_notebook_hook_receives_the_png_and_no_file_is_needed():
    shown = []
    interp = dsl.Interpreter()
    interp.display = shown.append
    interp.run("plot([1.0, 4.0, 9.0])")
    assert len(shown) == 1 and shown[0][:8] == PNG


def test_without_a_path_outside_a_notebook_it_says_once_that_nothing_was_drawn(capsys, in_tmp):
    interp = dsl.Interpreter(stdout=io.StringIO())
    assert interp.run("plot((1.0, 2.0))\nplot((3.0, 4.0))\n1 + 1") == 2
    err = capsys.readouterr().err
    assert err.count("plot drew nothing here") == 1 and 'path="plot.png"' in err
    assert list(in_tmp.iterdir()) == []


@pytest.mark.parametrize("src,kind,words", [
    ('plot("abc", path="x.png")', "type", "tensor or a tuple of numbers"),
    ('plot((1.0, "a"), path="x.png")', "type", "must hold numbers"),
    ('plot((1.0, 2.0), (1.0, 2.0, 3.0), path="x.png")', "shape", "xs has 2 entries but ys has 3 rows"),
    ('plot(zeros((2, 2, 2)), path="x.png")', "shape", "non-empty vector"),
    ('plot((1.0, 2.0), title=3, path="x.png")', "type", "title must be a string"),
    ('plot((1.0, 2.0), label=5, path="x.png")', "type", "label must be a string or a tuple of strings"),
    ('plot((1.0, 2.0), path=1)', "type", "path must be a string"),
])
def test_mistakes_are_dg_errors(src, kind, words):
    err = failure(src)
    assert err.kind == kind and words in err.message


def test_the_file_policy_applies(in_tmp):
    err = failure('plot((1.0, 2.0), path="x.png")', files="none")
    assert not (in_tmp / "x.png").exists()
    assert err.kind == "limit" and "file access is off" in err.message      # as for save


def test_a_jitted_function_plots_on_every_call(in_tmp):
    dsl.Interpreter().run('let f = jit(fn(x, p) { plot(x, path=p)\n return sum(x) })\n'
                          'f([1.0, 2.0], "one.png")\nf([2.0, 1.0], "two.png")')
    assert (in_tmp / "one.png").exists() and (in_tmp / "two.png").exists()


def test_without_matplotlib_a_plot_with_nowhere_to_go_still_runs(in_tmp):
    code = ("import sys\nsys.modules['matplotlib'] = None\nimport dsl\n"
            "print(dsl.Interpreter().run('plot((1.0, 2.0))\\n3'))\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.stdout.strip() == "3" and "plot drew nothing here" in done.stderr, done.stderr


def test_without_matplotlib_the_error_names_the_extra(in_tmp):
    code = ("import sys\nsys.modules['matplotlib'] = None\nimport dsl\n"
            "try:\n    dsl.Interpreter().run('plot((1.0, 2.0), path=\"x.png\")')\n"
            "except dsl.DgError as e:\n    print(e.kind, '|', e.message, '|', e.hint)\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.stdout.strip() == ("import | plot needs matplotlib, which is not installed | "
                                   "install the plot extra: pip install 'dg-lang[plot]'"), done.stderr
