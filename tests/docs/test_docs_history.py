"""User docs describe dg as it is now: no stops, issues, commits, dates or before/after figures
in README.md, docs/, the builtins' help and the standard library's comments. History belongs in
CHANGELOG.md and the git history."""

import re
from pathlib import Path

import pytest

from dsl.runtime.builtins.docs import DOCS

ROOT = Path(__file__).resolve().parents[2]
MONTHS = ("January|February|March|April|May|June|July|August|September|October|November|December|"
          "Jan|Feb|Mar|Apr|Jun|Jul|Aug|Sep|Sept|Oct|Nov|Dec")
HISTORY = [
    (re.compile(r"\b[Ss]top \d+"), "a stop of the project's work"),
    (re.compile(r"\b[Ii]ssues? \d+"), "an issue of the tracker"),
    (re.compile(r"\bcommit [0-9a-f]{7,}"), "a commit"),
    (re.compile(rf"\b(?:{MONTHS})\.? \d{{1,2}}\b"), "a date"),
    (re.compile(r"\b20\d\d-\d\d-\d\d\b"), "a date"),
    (re.compile(r"\d\s*(?:ms|us|µs|s|MB|x)?\s*->\s*\d"), "a before/after figure"),
    (re.compile(r"\buntil then\b|\bbefore the \w+ issue\b|\bsince (?:stop|issue)\b", re.I), "a story"),
]


def user_texts():
    """(where, text) of every user-facing document and help text."""
    for path in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")), *sorted((ROOT / "stdlib").glob("*.dg"))]:
        yield str(path.relative_to(ROOT)), path.read_text(encoding="utf-8")
    for name, doc in DOCS.items():
        yield f"help({name})", doc


@pytest.mark.parametrize("where, text", list(user_texts()), ids=[w for w, _ in user_texts()])
def test_user_docs_hold_no_history(where, text):
    found = [f"{why}: {line.strip()[:100]!r}" for line in text.splitlines()
             for pattern, why in HISTORY if pattern.search(line)]
    assert not found, f"{where} tells history (it belongs in CHANGELOG.md):\n" + "\n".join(found)


def test_the_history_test_catches_what_it_is_for():
    for line in ["as decided in stop 34", "issue 12 item 5", "at commit 1363907", "run on Nov 24 at 09:00",
                 "the 2026-11-25 run", "0.93 -> 0.59 ms", "until then every loop was written out"]:
        assert any(p.search(line) for p, _ in HISTORY), line
    for line in ['einsum("ij->ji", x)', "exit code 130", "fn(x) => x + 1", "stops at 4,300 digits"]:
        assert not any(p.search(line) for p, _ in HISTORY), line
