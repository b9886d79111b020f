"""docs/gradbench.md's tables, from the logs one sitting saved (bench/gradbench/sitting.py):

    python -m bench.gradbench.table            # print them
    python -m bench.gradbench.table --docs     # write them into docs/gradbench.md

Per eval: how many evaluations each of dg's backends got right, and the geometric means of dg's
times over the other tools'; then every evaluation's median run per tool. A time marked † is the
median of one or two runs, which is the slower of them: the first call's, its compilation
included, which took the eval's time budget (a second after it, if any, did not reach it); one
marked ‡ is under a thousandth of dg's (an asynchronous dispatch not waited for). Neither counts
in a mean.
"""

import math
import re
import sys

from .sitting import EVALS, RESULTS, ROOT, TOOLS

RUN = re.compile(r"(ok |BAD) (\w+)\s+(\S+)\s+median run\s+([\d.]+) ms\s+wall\s+[\d.]+ ms\s+runs (\d+)")
SUMMARY = re.compile(r"gradbench \w+: (\d+) valid, \d+ invalid, \d+ failed of (\d+)")
BEGIN = "<!-- the tables below: python -m bench.gradbench.table --docs -->"
END = "<!-- end of the generated tables -->"


def read(tool, name):
    """(summary match or None, {(function, size): (ms, runs)}) of one saved log."""
    path = RESULTS / f"{tool}_{name}.log"
    if not path.exists():
        return None, {}
    text = path.read_text()
    runs = {(fn, size): (float(ms), int(n)) for ok, fn, size, ms, n in RUN.findall(text) if ok == "ok "}
    return SUMMARY.search(text), runs


def flaw(time, dg):
    """The mark of a (ms, runs) time that does not count in a mean, or "": † for the median of one
    or two runs, ‡ for a time under a thousandth of dg's time `dg` (None: this is dg's own)."""
    if time[1] <= 2:
        return "†"
    return "‡" if dg is not None and time[0] < dg[0] / 1000 else ""


def counted(time, dg):
    """Whether a (ms, runs) time counts in a mean (judged against dg's time `dg`, as `flaw`)."""
    return time is not None and time[0] > 0 and not flaw(time, dg)


def mark(time, dg):
    """A time as the table shows it, with its mark."""
    if time is None:
        return "—"
    text, why = f"{time[0]:,.3f}", flaw(time, dg)
    return f"{text} {why}" if why else text


def geomean(pairs):
    """The geometric mean of a/b over the pairs (a, b) whose times both count (each already
    judged against dg's: None where it does not)."""
    ratios = [a[0] / b[0] for a, b in pairs if a is not None and b is not None]
    if not ratios:
        return "—"
    return f"{math.exp(sum(map(math.log, ratios)) / len(ratios)):.2f}x ({len(ratios)})"


def tables():
    """The markdown of both tables."""
    logs = {(tool, name): read(tool, name) for tool in TOOLS for name in EVALS}
    out = ["| eval | dg valid | dg on XLA valid | dg / jax | dg / jax waited | dg / pytorch | XLA / dg | XLA / jax "
           "| XLA / jax waited |",
           "|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    rows = ["| eval | function | size | dg (ms) | dg on XLA (ms) | jax (ms) | jax waited (ms) | pytorch (ms) |",
            "|---|---|---|---:|---:|---:|---:|---:|"]
    for name in EVALS:
        (dg_sum, dg), (xla_sum, xla) = logs[("dg", name)], logs[("xla", name)]
        jax, waited, torch = (logs[(tool, name)][1] for tool in ("jax", "jax-waited", "pytorch"))
        valid = [f"{s.group(1)} of {s.group(2)}" if s else "—" for s in (dg_sum, xla_sum)]
        keys = list(dg)
        # each time that counts, judged against dg's (None: it does not)
        use = {tool: {k: t.get(k) if counted(t.get(k), None if tool == "dg" else dg[k]) else None for k in keys}
               for tool, t in (("dg", dg), ("xla", xla), ("jax", jax), ("waited", waited), ("pytorch", torch))}
        ratios = [("dg", "jax"), ("dg", "waited"), ("dg", "pytorch"), ("xla", "dg"), ("xla", "jax"), ("xla", "waited")]
        out.append(f"| {name} | {valid[0]} | {valid[1]} | "
                   + " | ".join(geomean([(use[a][k], use[b][k]) for k in keys]) for a, b in ratios) + " |")
        for k in keys:
            d = dg[k]
            rows.append(f"| {name} | {k[0]} | {k[1]} | {mark(d, None)} | {mark(xla.get(k), None)} | "
                        f"{mark(jax.get(k), d)} | {mark(waited.get(k), d)} | {mark(torch.get(k), d)} |")
    return "\n".join(out) + "\n\nEvery evaluation's median run:\n\n" + "\n".join(rows) + "\n"


def main(argv=None):
    """Print the tables, or write them into docs/gradbench.md with --docs."""
    argv = sys.argv[1:] if argv is None else argv
    text = tables()
    if argv != ["--docs"]:
        sys.stdout.write(text)
        return 0
    page = ROOT / "docs" / "gradbench.md"
    doc = page.read_text()
    start, end = doc.index(BEGIN) + len(BEGIN), doc.index(END)
    page.write_text(doc[:start] + "\n\n" + text + "\n" + doc[end:])
    return 0


if __name__ == "__main__":
    sys.exit(main())
