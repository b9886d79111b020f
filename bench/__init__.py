"""dg's benchmark suite: `python -m bench` (or `python bench/run.py`) from the repo root.

Each benchmark runs in its own fresh Python process (bench/worker.py) and
reports rows: dg's figure, each reference's figure measured in the same
process, the ratio, the target and whether it is met. bench/run.py collects
the rows, prints the table and writes it as JSON. docs/benchmarks.md says more.
"""
