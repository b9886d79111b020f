"""Checkpoints: save(path, tree) / load(path) round trips, atomic saving, damaged files."""

import math
import os
import struct as pystruct
import zlib

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import dsl
from dsl.runtime.builtins import files
from dsl.errors import DgError
from dsl.core.values import Struct, make_struct


def same(a, b):
    """Exact equality including types, float bits (nan, -0.0), dtypes, key order and struct names."""
    if type(a) is not type(b):
        return False
    if isinstance(a, float):
        return pystruct.pack("<d", a) == pystruct.pack("<d", b) or (math.isnan(a) and math.isnan(b))
    if isinstance(a, np.ndarray):
        return (a.dtype == b.dtype and a.shape == b.shape
                and a.tobytes() == b.tobytes())
    if isinstance(a, tuple):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    if isinstance(a, dict):
        return (list(a) == list(b) and all(type(k) is type(j) for k, j in zip(a, b))
                and all(same(a[k], b[k]) for k in a))
    if isinstance(a, Struct):
        return (a._name == b._name and a._fields == b._fields
                and all(same(x, y) for x, y in zip(a.vals, b.vals)))
    return a == b


def round_trip(tree, tmp_path):
    """Save a tree through dg and load it back."""
    interp = dsl.Interpreter()
    interp.bind("tree", tree)
    path = tmp_path / "t.ckpt"
    interp.run(f'save("{path}", tree)')
    return interp.run(f'load("{path}")')


# ---------------------------------------------------------------- round trips
@pytest.mark.parametrize("value", [
    0, -7, 2 ** 200, -(3 ** 5000), 1.5, -0.0, float("nan"), float("inf"), float("-inf"), 5e-324,
    0.1 + 0.2, True, False, "", "naïve ☃ \"quoted\"\n", None,
    (), (1,), {}, np.zeros((0, 3)), np.array(2.5), np.array([True, False]),
    np.arange(24.0).reshape(2, 3, 4), np.array([np.nan, np.inf, -0.0]),
])
def test_every_kind_of_leaf_round_trips_exactly(value, tmp_path):
    assert same(round_trip(value, tmp_path), value)


def test_nested_tree_with_structs_and_keys_of_every_type(tmp_path):
    lin = make_struct("Linear", w=np.eye(2), b=np.array([1.0, -1.0]))
    tree = {"params": {"enc": lin, 3: (1, 2.0, "x"), True: None},
            "opt": {"step": 12, "m": make_struct("Pair", second=0.5, first=(lin, lin))}}
    back = round_trip(tree, tmp_path)
    assert same(back, tree)
    assert list(back["params"]) == ["enc", 3, True] and type(list(back["params"])[2]) is bool
    assert back["opt"]["m"]._fields == ("second", "first")


def test_loaded_structs_work_in_dg_and_compare_equal(tmp_path):
    path = tmp_path / "m.ckpt"
    out = dsl.Interpreter().run(
        f"struct Linear {{ w, b }}\nlet m = {{\"l\": Linear(w=[1.0, 2.0], b=3.0)}}\n"
        f'save("{path}", m)\nlet back = load("{path}")\n'
        '(back == m, type(back["l"]), back["l"].w @ [1.0, 1.0] + back["l"].b)')
    assert out == (True, "Linear", 6.0)


def test_save_strips_recorded_values(tmp_path):
    path = tmp_path / "g.ckpt"
    g = dsl.Interpreter().run(f'fn f(x) {{ save("{path}", x * 2.0)\n return sum(x) }}\n'
                              f'grad(f)([1.0, 2.0])\nload("{path}")')
    np.testing.assert_array_equal(g, [2.0, 4.0])


leaf = st.one_of(
    st.integers(), st.floats(allow_nan=True, allow_infinity=True), st.booleans(), st.none(),
    st.text(max_size=8),
    st.lists(st.floats(allow_nan=True, width=64), max_size=5).map(lambda v: np.array(v, dtype=float)),
)
key = st.one_of(st.text(max_size=5), st.integers(-5, 5))
tree = st.recursive(leaf, lambda kids: st.one_of(
    st.lists(kids, max_size=4).map(tuple),
    st.dictionaries(key, kids, max_size=4),
    st.lists(kids, min_size=1, max_size=3).map(
        lambda vs: make_struct("S" + str(len(vs)), **{f"f{i}": v for i, v in enumerate(vs)})),
), max_leaves=12)


@settings(max_examples=60, deadline=None)
@given(tree)
def test_random_trees_round_trip_exactly(t):
    blob = files.encode(t)
    assert same(files.decode(blob), t)


# ---------------------------------------------------------------- what cannot be saved
def test_functions_cannot_be_saved(tmp_path, run_error):
    err = run_error(f'save("{tmp_path / "f.ckpt"}", {{"f": fn(x) => x}})')
    assert err.kind == "type" and "function" in err.message and not (tmp_path / "f.ckpt").exists()


def test_save_into_a_missing_directory_is_a_value_error(tmp_path, run_error):
    err = run_error(f'save("{tmp_path / "no" / "such" / "x.ckpt"}", 1)')
    assert err.kind == "value" and "cannot save" in err.message


def test_save_onto_a_directory_is_a_value_error(tmp_path, run_error):
    assert run_error(f'save("{tmp_path}", 1)').kind == "value"


def test_absurdly_deep_trees_are_refused(tmp_path, run_error):
    err = run_error(f'let t = ()\nfor i in range(1200) {{ t = (t,) }}\nsave("{tmp_path / "d.ckpt"}", t)')
    assert err.kind == "value" and "deep" in err.message


def test_save_path_must_be_a_string(run_error):
    assert run_error("save(3, 1)").kind == "type"


def test_relative_paths_are_in_the_working_directory(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert dsl.Interpreter().run('save("rel.ckpt", (1, 2))\nload("rel.ckpt")') == (1, 2)
    assert (tmp_path / "rel.ckpt").is_file()


# ---------------------------------------------------------------- atomicity
def saved_state(tmp_path):
    """Write an old checkpoint; return (path, its bytes)."""
    path = tmp_path / "model.ckpt"
    dsl.Interpreter().run(f'save("{path}", {{"old": [1.0, 2.0]}})')
    return path, path.read_bytes()


def check_untouched(tmp_path, path, old):
    """The old checkpoint is intact and no temporary file is left behind."""
    assert path.read_bytes() == old
    assert sorted(p.name for p in tmp_path.iterdir()) == ["model.ckpt"]
    assert same(dsl.Interpreter().run(f'load("{path}")'), {"old": np.array([1.0, 2.0])})


class HalfWriter:
    """A file wrapper whose write puts half the bytes on disk and then fails, like a crash."""

    def __init__(self, fh):
        """Wrap a real file."""
        self.fh = fh

    def write(self, data):
        """Write half the data, then fail as a full disk would."""
        self.fh.write(data[:len(data) // 2])
        self.fh.flush()
        raise OSError(28, "No space left on device")

    def __getattr__(self, name):
        """Everything else is the real file's."""
        return getattr(self.fh, name)

    def __enter__(self):
        """Used as a context manager, like the file."""
        return self

    def __exit__(self, *exc):
        """Close the real file."""
        self.fh.close()


def test_a_save_failing_halfway_through_writing_keeps_the_old_file(tmp_path, monkeypatch):
    path, old = saved_state(tmp_path)
    real_fdopen = os.fdopen
    monkeypatch.setattr(files.os, "fdopen", lambda *a, **k: HalfWriter(real_fdopen(*a, **k)))
    with pytest.raises(DgError) as info:
        dsl.Interpreter().run(f'save("{path}", {{"new": zeros((1000,))}})')
    assert info.value.kind == "value" and "No space left" in info.value.message
    monkeypatch.undo()
    check_untouched(tmp_path, path, old)


@pytest.mark.parametrize("step", ["fsync", "replace"])
def test_a_save_failing_before_the_rename_keeps_the_old_file(tmp_path, monkeypatch, step):
    path, old = saved_state(tmp_path)

    def fail(*args, **kwargs):
        """An I/O error in place of the real step."""
        raise OSError(5, "Input/output error")
    monkeypatch.setattr(files.os, step, fail)
    with pytest.raises(DgError) as info:
        dsl.Interpreter().run(f'save("{path}", "new")')
    assert info.value.kind == "value"
    monkeypatch.undo()
    check_untouched(tmp_path, path, old)


def test_an_interrupt_during_save_keeps_the_old_file(tmp_path, monkeypatch):
    path, old = saved_state(tmp_path)

    def interrupt(*args, **kwargs):
        """A Ctrl-C in the middle of the save."""
        raise KeyboardInterrupt
    monkeypatch.setattr(files.os, "fsync", interrupt)
    with pytest.raises(KeyboardInterrupt):
        dsl.Interpreter().run(f'save("{path}", "new")')
    monkeypatch.undo()
    check_untouched(tmp_path, path, old)


def test_a_successful_save_replaces_the_file_and_keeps_its_permissions(tmp_path):
    path, _ = saved_state(tmp_path)
    os.chmod(path, 0o640)
    dsl.Interpreter().run(f'save("{path}", "new")')
    assert dsl.Interpreter().run(f'load("{path}")') == "new"
    assert path.stat().st_mode & 0o777 == 0o640
    assert sorted(p.name for p in tmp_path.iterdir()) == ["model.ckpt"]


# ---------------------------------------------------------------- damaged and foreign files
def load_error(tmp_path, blob):
    """The DgError of loading a file with these bytes."""
    path = tmp_path / "bad.ckpt"
    path.write_bytes(blob)
    with pytest.raises(DgError) as info:
        dsl.Interpreter().run(f'load("{path}")')
    return info.value


def with_header(header, data=b"", version=1):
    """Checkpoint bytes around an arbitrary header, with a correct checksum."""
    crc = zlib.crc32(data, zlib.crc32(header))
    return files._PREFIX.pack(files.MAGIC, version, len(header), len(data), crc) + header + data


GOOD = files.encode({"w": np.arange(6.0), "n": 3})


@pytest.mark.parametrize("blob, words", [
    (b"", "not a dg checkpoint"),
    (b"struct Linear { w, b }\n", "not a dg checkpoint"),
    (b"PK\x03\x04" + b"\x00" * 40, "not a dg checkpoint"),
    (GOOD[:-5], "truncated"),
    (GOOD + b"junk", "truncated or extended"),
    (GOOD[:-3] + bytes([GOOD[-3] ^ 1]) + GOOD[-2:], "checksum"),
    (GOOD[:40] + bytes([GOOD[40] ^ 0x20]) + GOOD[41:], "checksum"),
    (GOOD[:8] + b"\x02" + GOOD[9:], "version 2"),
    (with_header(b"{not json"), "not valid JSON"),
    (with_header(b'{"tree": {"t": "int", "v": "0x1"}}'), "does not describe"),
    (with_header(b'{"format": "dg-checkpoint", "tree": {"t": "code", "v": "rm -rf"}}'), "unknown kind"),
    (with_header(b'{"format": "dg-checkpoint", "tree": {"t": "int", "v": "12z"}}'), "bad int"),
    (with_header(b'{"format": "dg-checkpoint", "tree": {"t": "tensor", "dtype": "float64", '
                 b'"shape": [4], "offset": 0, "nbytes": 32}}', b"\x00" * 16), "bad tensor"),
    (with_header(b'{"format": "dg-checkpoint", "tree": {"t": "tensor", "dtype": "float64", '
                 b'"shape": [3], "offset": 0, "nbytes": 16}}', b"\x00" * 16), "does not match"),
    (with_header(b'{"format": "dg-checkpoint", "tree": {"t": "tensor", "dtype": "float64", '
                 b'"shape": [0, 1000000000000000000000], "offset": 0, "nbytes": 0}}'), "bad tensor"),
    (with_header(b'{"format": "dg-checkpoint", "tree": {"t": "struct", "name": "A", '
                 b'"fields": ["x", "x"], "items": [1, 2]}}'), "bad struct"),
    (with_header(b'{"format": "dg-checkpoint", "tree": {"t": "map", "items": [[{"t": "none"}, '
                 b'{"t": "none"}]]}}'), "map key"),
    (with_header(b'{"format": "dg-checkpoint", "tree": ' + b'{"t": "tuple", "items": [' * 5000
                 + b']}' * 5000 + b'}'), "deeply"),
    (with_header(b'{"format": "dg-checkpoint", "tree": ' + b'[' * 50000 + b']' * 50000 + b'}'), "not an object"),
    (with_header(b'{"format": "dg-checkpoint", "tree": ' + b'[' * 500000 + b']' * 500000 + b'}'), "JSON"),
])
def test_damaged_or_foreign_files_are_value_errors(tmp_path, blob, words):
    err = load_error(tmp_path, blob)
    assert err.kind == "value" and "cannot load" in err.message
    assert words in err.message


def test_loading_a_missing_file(tmp_path, run_error):
    err = run_error(f'load("{tmp_path / "missing.ckpt"}")')
    assert err.kind == "value" and "missing.ckpt" in err.message


def test_the_format_is_documented_bytes():
    blob = files.encode(2.5)
    magic, version, header_len, data_len, crc = files._PREFIX.unpack_from(blob)
    assert magic == b"DGCKPT\r\n" and version == 1 and data_len == 0
    assert blob[files._PREFIX.size:] == b'{"format":"dg-checkpoint","tree":{"t":"float","v":"2.5"}}'


TOKENS = [b"0", b"-1", b'"', b"[", b"]", b"{", b"}", b"null", b"true", b"1e400", b'"bool"',
          b"99999999999", b",", b":", b'"struct"', b'"map"', b'"tensor"', b'"int"']


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 10 ** 6), st.sampled_from(TOKENS), st.integers(0, 4)),
                min_size=1, max_size=3))
def test_tampered_headers_with_a_valid_checksum_never_crash(edits):
    tree = {"a": (1, 2.5, "x", None, True), "w": np.arange(6.0).reshape(2, 3),
            "s": make_struct("L", w=np.eye(2), b=np.array([True, False])), 3: {"k": -5}}
    blob = files.encode(tree)
    _, _, header_len, _, _ = files._PREFIX.unpack_from(blob)
    start = files._PREFIX.size
    header, data = bytearray(blob[start:start + header_len]), blob[start + header_len:]
    for pos, token, width in edits:
        pos %= len(header)
        header[pos:pos + width] = token
    try:
        files.decode(with_header(bytes(header), data))
    except (files.Damaged, DgError):
        pass


@pytest.mark.parametrize("digits", [3_575, 5_000, 10_000_000])
def test_an_int_longer_than_dgs_ints_is_refused_by_load(tmp_path, digits):
    # dg's ints have at most 4,300 decimal digits; a longer one would make // and % run unbounded
    header = b'{"format": "dg-checkpoint", "tree": {"t": "int", "v": "0x' + b"f" * digits + b'"}}'
    err = load_error(tmp_path, with_header(header))
    assert err.kind == "value" and "longer than dg's ints" in err.message


def test_the_longest_int_dg_makes_round_trips(tmp_path):
    biggest = -(10 ** 4300 - 1)
    assert same(round_trip(biggest, tmp_path), biggest)


def test_a_save_removes_the_temporary_files_of_killed_saves_to_that_path(tmp_path):
    import subprocess
    import sys
    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True).stdout.strip()
    stale = tmp_path / f".w.ckpt.{gone}.x1y2.tmp"           # a save killed before its rename
    running = tmp_path / f".w.ckpt.{os.getppid()}.a3b4.tmp"  # a save of a live process
    other = tmp_path / f".v.ckpt.{gone}.c5d6.tmp"           # another path's
    for p in (stale, running, other):
        p.write_bytes(b"partial")
    dsl.Interpreter().run(f'save("{tmp_path / "w.ckpt"}", 1.0)')
    assert not stale.exists() and running.exists() and other.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([running.name, other.name, "w.ckpt"])
