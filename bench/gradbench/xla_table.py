"""The GradBench table of dg's XLA backend: `python -m bench.gradbench.xla_table` reads the runs
saved in bench/results/gradbench-xla/ (one gbrun.py log per eval, DG_BACKEND=xla) and the
per-evaluation times of docs/gradbench.md's table (dg on numpy, GradBench's jax tool), and prints
per eval the validity and the geometric means of the XLA backend's times over those."""

import math
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
EVALS = "hello lse llsq det ode gmm kmeans lstm particle saddle ba ht".split()
ROW = re.compile(r"\| (\w+) \| (\w+) \| ([^|]+) \| ([^|]+) \| ([^|]+) \|")
RUN = re.compile(r"ok\s+(\w+)\s+(\S+)\s+median run\s+([\d.]+) ms")


def _number(text):
    """A time of the docs' table, or None (a dash, or a run marked † or ‡: it does not count)."""
    text = text.strip()
    if "†" in text or "‡" in text:
        return None
    try:
        return float(text.replace(",", ""))
    except ValueError:
        return None


def documented():
    """(eval, function, size) -> (dg's time on numpy, jax's time), from docs/gradbench.md."""
    table = {}
    for line in (ROOT / "docs" / "gradbench.md").read_text().splitlines():
        m = ROW.match(line)
        if m and _number(m.group(4)) is not None:
            table[(m.group(1), m.group(2), m.group(3).strip())] = (_number(m.group(4)), _number(m.group(5)))
    return table


def _mean(ratios):
    """A geometric mean with its count, or a dash."""
    if not ratios:
        return "—"
    return f"{math.exp(sum(map(math.log, ratios)) / len(ratios)):.1f}x ({len(ratios)})"


def main():
    """Print the markdown table."""
    table = documented()
    print("| eval | valid with backend xla | xla / numpy (geometric mean) | xla / jax (geometric mean) |")
    print("|---|---:|---:|---:|")
    for name in EVALS:
        log = (ROOT / "bench" / "results" / "gradbench-xla" / f"gbx_{name}.log").read_text()
        summary = re.search(r"gradbench \w+: (\d+) valid, \d+ invalid, \d+ failed of (\d+)", log)
        numpy, jax = [], []
        for fn, size, ms in RUN.findall(log):
            dg, jx = table.get((name, fn, size), (None, None))
            if dg:
                numpy.append(float(ms) / dg)
            if jx:
                jax.append(float(ms) / jx)
        print(f"| {name} | {summary.group(1)} of {summary.group(2)} | {_mean(numpy)} | {_mean(jax)} |")


if __name__ == "__main__":
    main()
