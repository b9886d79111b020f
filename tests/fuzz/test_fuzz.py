"""Property-based fuzzing of the whole pipeline: parse, resolve (`dg check`), compile and run.

Every input must end in a normal result or a DgError with a kind and a
location inside its source (tests/fuzz_harness.py judges that). The inputs:
random bytes and unicode, dg token soup, the example programs with tokens
deleted, duplicated, swapped or replaced, grammar-generated programs, and
every builtin and operator on odd values (tests/fuzz_strategies.py). Every
input that once failed is kept in tests/fuzz_corpus/ and replayed here,
in-process and through the CLI.

CI runs a bounded number of examples (derandomized, so CI is repeatable);
`DG_FUZZ_EXAMPLES=20000 pytest tests/fuzz/test_fuzz.py` runs a long random
search that writes new failures into the corpus (docs/reliability.md).
"""

import io
import re
import shutil
from contextlib import redirect_stderr, redirect_stdout

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import dsl
from dsl import cli
from fuzz_harness import CORPUS, fuzz_examples, judged, long_run, outcome
from fuzz_strategies import ROOT, builtin_calls, mutated_examples, operator_uses, programs, soup

# dg raises Python's recursion limit for its call depth; hypothesis warns that it cannot restore it.
pytestmark = pytest.mark.filterwarnings("ignore:The recursion limit will not be reset")

SLOW_OK = [HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much,
           HealthCheck.large_base_example]


def fuzz(default):
    """Hypothesis settings for a fuzz test with `default` examples in CI."""
    return settings(max_examples=fuzz_examples(default), deadline=None, database=None,
                    derandomize=not long_run(), suppress_health_check=SLOW_OK, print_blob=True)


# ---------------------------------------------------------------- raw input
@fuzz(400)
@given(st.binary(max_size=300))
def test_random_bytes_end_in_a_result_or_a_located_error(data):
    text = data.decode("utf-8") if _is_utf8(data) else data.decode("latin-1")
    judged(text, "bytes")


@fuzz(400)
@given(st.text(max_size=300))
def test_random_unicode_ends_in_a_result_or_a_located_error(text):
    judged(text, "unicode")


@fuzz(600)
@given(soup())
def test_token_soup_ends_in_a_result_or_a_located_error(text):
    judged(text, "soup")


def _is_utf8(data):
    """Whether bytes decode as UTF-8."""
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


# ---------------------------------------------------------------- mutated examples
@pytest.fixture(scope="module")
def examples_copy(tmp_path_factory):
    """A copy of examples/ (with its data) that mutated programs may read and write."""
    target = tmp_path_factory.mktemp("examples")
    shutil.copytree(ROOT / "examples", target, dirs_exist_ok=True)
    return target


@fuzz(150)
@given(mutated_examples())
def test_mutated_examples_end_in_a_result_or_a_located_error(examples_copy, example):
    path, text = example
    judged(text, f"mutated-{path.stem}", filename=str(examples_copy / path.name),
           limits=dict(timeout=0.2, max_steps=5_000), files=[examples_copy])


# ---------------------------------------------------------------- generated programs
@fuzz(350)
@given(programs())
def test_generated_programs_end_in_a_result_or_a_located_error(program):
    judged(program, "generated")


def test_generated_programs_mostly_run_to_the_end():
    """The generator is worth its time only if most of its programs get past the checks."""
    results = []

    @settings(max_examples=150, deadline=None, database=None, derandomize=True, suppress_health_check=SLOW_OK)
    @given(programs(wrong_rate=0.0))
    def collect(program):
        results.append(outcome(program))

    collect()
    share = results.count("ok") / len(results)
    assert share >= 0.6, f"only {share:.0%} of generated programs ran to the end: {sorted(set(results))}"


# ---------------------------------------------------------------- the corpus
# Each file starts with a `# fixed: ...` line saying what went wrong; a line `# ----` separates
# inputs that are replayed one by one (a program stops at its first error).
CORPUS_CASES = [(path, i, chunk) for path in sorted(CORPUS.glob("*.dg"))
                for i, chunk in enumerate(re.split(r"^# -{4,}[ \t]*$", path.read_text(encoding="utf-8"), flags=re.M))]
CASE_IDS = [f"{path.stem}-{i}" for path, i, _ in CORPUS_CASES]


@pytest.mark.parametrize("path, i, text", CORPUS_CASES, ids=CASE_IDS)
def test_corpus_input_ends_in_a_result_or_a_located_error(path, i, text):
    outcome(text, filename=str(path))


@pytest.mark.parametrize("path, i, text", CORPUS_CASES, ids=CASE_IDS)
def test_corpus_input_through_the_cli_has_no_internal_error(path, i, text, tmp_path):
    script = tmp_path / path.name
    script.write_text(text, encoding="utf-8")
    for args in (["check", str(script)],
                 ["run", "--timeout", "2", "--max-steps", "100000", "--max-tensor", "1000000",
                  "--files", "none", str(script)]):
        out, err = io.StringIO(), io.StringIO()
        with redirect_stdout(out), redirect_stderr(err):
            code = cli.main(args)
        assert code in (0, 1), (args[0], code, err.getvalue()[-500:])
        assert "internal error" not in err.getvalue() and "Traceback" not in err.getvalue(), err.getvalue()


def test_the_corpus_is_kept():
    assert len(CORPUS_CASES) >= 30
    for path in {p for p, _, _ in CORPUS_CASES}:
        assert path.read_text(encoding="utf-8").startswith("# fixed: "), path.name


# ---------------------------------------------------------------- wrong answers the fuzzers found
def test_a_custom_vjp_backward_of_the_wrong_shape_is_a_grad_error(run_error):
    for bwd in ("(1.0, 2.0)", '"a"', "ones((5,))"):
        err = run_error(f"let f = custom_vjp(fn(x) => x * 2.0, fn(x, out, g) => {bwd})\ngrad(f)(1.0)")
        assert err.kind == "grad" and "as the gradient of a float" in err.message


def test_cat_and_stack_of_a_recorded_tensor_keep_its_gradient(run):
    # the rows of a recorded tensor were taken unrecorded, so the gradient was silently lost
    assert run("print(grad(fn(x) => sum(cat(x) * 2.0))(ones((2, 3))))") == \
        "[[2.0, 2.0, 2.0], [2.0, 2.0, 2.0]]\n"
    assert run("print(grad(fn(x) => sum(stack(x) * 3.0))(ones((2, 2))))") == "[[3.0, 3.0], [3.0, 3.0]]\n"


# ---------------------------------------------------------------- builtins and operators
BUILTIN_NAMES = sorted(dsl.Interpreter().builtins)


@pytest.fixture(scope="module")
def scratch(tmp_path_factory):
    """A directory the fuzzed file builtins may read and write, holding a CSV file."""
    directory = tmp_path_factory.mktemp("scratch")
    (directory / "t.csv").write_text("a,b\n1,2\n")
    return directory


@fuzz(700)
@given(builtin_calls(BUILTIN_NAMES))
def test_builtins_on_odd_values_end_in_a_result_or_a_located_error(scratch, program):
    judged(program.replace("SCRATCH", str(scratch)), "builtin", files=[scratch])


@fuzz(400)
@given(operator_uses())
def test_operators_on_odd_values_end_in_a_result_or_a_located_error(program):
    judged(program, "operator")


# ---------------------------------------------------------------- what the red team reached
FORMAT_VALUES = ["0", "-1", "2 ** 40", "10 ** 400", "10 ** 4299", "1.5", "-0.0", "1e308", 'float("nan")',
                 'float("inf")', "true", '"s"', "none", "[1.0, -2.0]", "zeros((0,))", "(1, 2)", "P(1.0)"]
SPEC_PARTS = ["", "<", ">", "^", "=", "+", "-", " ", "#", "0", ",", "_", "5", "30", "400", "99999", ".", ".3",
              ".400", "d", "c", "e", "E", "f", "g", "%", "x", "o", "b", "s", "n", "z", "{", "}"]


@fuzz(400)
@given(st.sampled_from(FORMAT_VALUES), st.lists(st.sampled_from(SPEC_PARTS), max_size=6))
def test_fstring_format_specs_on_odd_values(value, parts):
    spec = "".join(parts).replace("{", "").replace("}", "")
    judged(f'struct P {{ w }}\nlet v = {value}\nprint(f"[{{v:{spec}}}]")', "fstring-spec")


BIG_INTS = ["10 ** 4299", "-(10 ** 4299)", "9 * 10 ** 4299", "2 ** 14283", "3 ** 9000", "7"]
INT_OPS = ["+", "-", "*", "//", "%", "**", "==", "<"]


@fuzz(300)
@given(st.sampled_from(BIG_INTS), st.sampled_from(INT_OPS), st.sampled_from(BIG_INTS + ["2", "0", "-1", "1.5"]),
       st.sampled_from(["print(r)", "str(r)", "float(r)", "zeros(r)", "ones(2)[r]", "range(r)", 'f"{r:e}"',
                        "r * 1.0", "sum(ones(2), axis=r)", "[r]"]))
def test_big_ints_in_arithmetic_and_messages(a, op, b, use):
    judged(f"let r = {a} {op} {b}\n{use}", "big-int")


def _checkpoint_bytes():
    """A valid checkpoint of a small tree, made by dg itself."""
    from dsl.runtime.builtins import files
    return files.encode({"w": np.arange(6.0).reshape(2, 3), "n": 3, "s": "text", "t": (1.0, True, None)})


@fuzz(400)
@given(st.lists(st.tuples(st.integers(0, 400), st.integers(0, 255)), min_size=1, max_size=6),
       st.booleans())
def test_crafted_checkpoints_load_or_give_a_dg_error(tmp_path_factory, edits, fix_checksum):
    import zlib
    from dsl.runtime.builtins import files
    blob = bytearray(_checkpoint_bytes())
    for position, byte in edits:
        blob[position % len(blob)] = byte
    if fix_checksum:        # reach the header parser, not only the checksum test
        magic, version, hlen, dlen, _ = files._PREFIX.unpack_from(blob)
        body = bytes(blob[files._PREFIX.size:])
        crc = zlib.crc32(body[hlen:], zlib.crc32(body[:hlen])) if hlen <= len(body) else 0
        blob[:files._PREFIX.size] = files._PREFIX.pack(magic, version, hlen, dlen, crc)
    path = tmp_path_factory.mktemp("ckpt") / "c.ckpt"
    path.write_bytes(bytes(blob))
    judged(f'let t = load("{path}")\nprint(t)', "checkpoint", files="all")


class _Failing(io.StringIO):
    """An output stream that fails after `after` characters, as a full disk or a closed pipe does."""

    def __init__(self, after, error):
        super().__init__()
        self.after, self.error = after, error

    def write(self, text):
        if self.tell() + len(text) > self.after:
            raise self.error
        return super().write(text)


@fuzz(150)
@given(st.integers(0, 40), st.sampled_from([OSError(28, "No space left on device"), ValueError("closed file"),
                                            OSError(5, "Input/output error")]),
       st.sampled_from(['print("x" * 30)', "for i in range(20) { print(i) }", 'print("caf\u00e9")',
                        "let g = jit(fn(x) { print(x)\n return x * 2.0 })\nprint(g(1.0) + g(2.0))"]))
def test_output_that_fails_is_an_output_error_never_a_traceback(after, error, program):
    from dsl.errors import OutputFailed
    interp = dsl.Interpreter(stdout=_Failing(after, error))
    try:
        interp.run(program)
    except OutputFailed as exc:
        assert str(exc).startswith("cannot write to the output")
