"""docs/tutorial.md runs as written: its ```dg blocks, in order, in one interpreter (in a
temporary directory, for the files it writes); where a block is followed by a ```text block,
that is exactly what the block prints."""

import io
import os
import re
from pathlib import Path

import dsl

ROOT = Path(__file__).resolve().parents[2]
BLOCK = re.compile(r"```(dg|text)\n(.*?)```", re.S)


def blocks(path):
    """[(code, expected output or None)] of a page's dg blocks."""
    found = BLOCK.findall(path.read_text(encoding="utf-8"))
    out = []
    for k, (kind, text) in enumerate(found):
        if kind == "dg":
            expected = found[k + 1][1] if k + 1 < len(found) and found[k + 1][0] == "text" else None
            out.append((text, expected))
    return out


def test_every_block_of_the_tutorial_runs_and_prints_what_the_page_shows(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    out = io.StringIO()
    interp = dsl.Interpreter(stdout=out)
    code = blocks(ROOT / "docs" / "tutorial.md")
    assert len(code) >= 8
    for k, (text, expected) in enumerate(code):
        start = out.tell()
        interp.run(text, f"tutorial block {k + 1}")
        if expected is not None:
            assert out.getvalue()[start:] == expected, f"block {k + 1}"
    assert (tmp_path / "model.ckpt").exists()
