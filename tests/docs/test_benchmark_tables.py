"""The benchmark tables in README.md and docs/benchmarks.md are the saved runs'
(bench/results/latest.json, and gpu.json for the GPU section), as `python -m bench --docs` writes them: a run saved without
regenerating them, or a figure edited by hand, fails here."""

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from bench import readme  # noqa: E402
from bench.report import docs_page  # noqa: E402
from bench.run import saved_gpu_run  # noqa: E402

SAVED = json.loads((ROOT / "bench" / "results" / "latest.json").read_text(encoding="utf-8"))


def test_the_readmes_performance_table_is_the_saved_runs():
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    assert readme.rewrite(text, SAVED["rows"]) == text


def test_docs_benchmarks_is_the_saved_runs_table():
    intro = (ROOT / "bench" / "benchmarks_intro.md").read_text(encoding="utf-8")
    page = (ROOT / "docs" / "benchmarks.md").read_text(encoding="utf-8")
    assert page == docs_page(intro, SAVED, *saved_gpu_run())


def test_ratios_are_written_with_two_significant_digits_and_level_within_five_percent():
    assert [readme.times(v) for v in (0.0333, 1.0, 2.04, 12.4, 0.5)] == ["0.033x", "1.0x", "2.0x", "12x", "0.5x"]
    assert readme.versus("a", 1.0, "b", 1.04) == "a level with b (0.96x its time)"
    assert readme.versus("a", 1.0, "b", 3.0) == "a 3.0x faster than b"
    assert readme.versus("a", 3.0, "b", 1.0) == "b 3.0x faster than a"
