"""docs/reliability.md names a test for each promise: every test it names exists."""

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_every_test_named_in_the_reliability_promises_exists():
    text = (ROOT / "docs" / "reliability.md").read_text(encoding="utf-8")
    table = text[text.index("## Each promise and the test that proves it"):]
    named = 0
    for line in table.splitlines():
        if not line.startswith("| ") or line.startswith("| promise") or line.startswith("|---"):
            continue
        current = None
        for ref in re.findall(r"`([^`]*)`", line.split("|")[2]):
            path, _, name = ref.partition("::")
            if path:
                current = ROOT / path
            assert current is not None and current.exists(), (line, ref)
            if name:
                assert f"def {name}(" in current.read_text(encoding="utf-8"), (current.name, name)
                named += 1
    assert named >= 20


def test_no_table_is_cut_in_two_by_a_blank_line():
    # Markdown ends a table at a blank line: the rows after it render as a paragraph of pipes
    # (docs/stdlib.md's optimizers past adam did)
    for path in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        lines = path.read_text(encoding="utf-8").split("\n")
        for i in range(1, len(lines) - 2):
            if lines[i] == "" and lines[i - 1].startswith("|") and lines[i + 1].startswith("|") \
                    and not lines[i + 2].startswith("|---"):
                raise AssertionError(f"{path.name}:{i + 1}: a blank line inside a table")
