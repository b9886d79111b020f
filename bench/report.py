"""Rows of results, and the table and JSON made from them."""

import json
import math


def make_row(benchmark, unit, dg, refs, ratio, ratio_of, target, met, note=""):
    """One result row.

    refs maps a reference's name to its figure (None when it was skipped);
    ratio is dg's figure over the one named by ratio_of (None when there is
    no comparison); met is True, False, or None (smoke runs, skipped refs).
    """
    return {"benchmark": benchmark, "unit": unit, "dg": dg, "refs": dict(refs), "ratio": ratio,
            "ratio_of": ratio_of, "target": target, "met": met, "note": note}


def fmt(x):
    """A figure with about three significant digits, or '-' when missing."""
    if x is None:
        return "-"
    if isinstance(x, str):
        return x
    if isinstance(x, bool):
        return "yes" if x else "no"
    if x == 0 or not math.isfinite(x):
        return str(x)
    if abs(x) >= 100:
        return f"{x:,.0f}"
    digits = max(0, 2 - int(math.floor(math.log10(abs(x)))))
    return f"{x:.{digits}f}"


def met_text(met):
    """How the met column reads."""
    return {True: "MET", False: "MISSED", None: "-"}[met]


def columns(row):
    """The table cells of one row."""
    refs = ", ".join(f"{name} {fmt(v) if v is not None else 'skipped'}" for name, v in row["refs"].items())
    ratio = "-" if row["ratio"] is None else f"{fmt(row['ratio'])}x {row['ratio_of']}"
    return [row["benchmark"], row["unit"], fmt(row["dg"]), refs or "-", ratio, row["target"],
            met_text(row["met"])]


HEADER = ["benchmark", "unit", "dg", "references", "ratio", "target", "met"]


def table(rows):
    """A plain-text table of the rows, with the notes listed below it."""
    cells = [HEADER] + [columns(r) for r in rows]
    widths = [max(len(c[i]) for c in cells) for i in range(len(HEADER))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(line, widths)).rstrip() for line in cells]
    lines.insert(1, "  ".join("-" * w for w in widths))
    notes = [f"- {r['benchmark']}: {r['note']}" for r in rows if r["note"]]
    return "\n".join(lines + ([""] + notes if notes else []))


def markdown(rows):
    """The same table in Markdown, for docs/benchmarks.md."""
    cells = [columns(r) for r in rows]
    out = ["| " + " | ".join(HEADER) + " |", "|" + "---|" * len(HEADER)]
    out += ["| " + " | ".join(c.replace("|", "\\|") for c in line) + " |" for line in cells]
    notes = [f"- **{r['benchmark']}**: {r['note']}" for r in rows if r["note"]]
    return "\n".join(out + ([""] + notes if notes else [])) + "\n"


def docs_page(intro, data, gpu=None, gpu_intro=""):
    """docs/benchmarks.md: the hand-written explanation, then the saved run's table (no date: the
    page says what dg does, the JSON when it was measured); then, where a GPU run is saved, its
    explanation and table."""
    head = [intro.rstrip(), "", "## Results", "", _setting(data["meta"]), "", ""]
    page = "\n".join(head) + markdown(data["rows"])
    if gpu is None:
        return page
    return page + "\n" + "\n".join([gpu_intro.rstrip(), "", _setting(gpu["meta"]), "", ""]) + markdown(gpu["rows"])


def _setting(meta):
    """The line that says where and how a saved run measured."""
    versions = ", ".join(f"{k} {v}" for k, v in meta.get("versions", {}).items() if v is not None)
    where = f"{meta['accelerator']}; " if meta.get("accelerator") else ""
    return (f"{where}{meta.get('cpus', '?')} CPUs, BLAS threads {meta.get('threads', 1)}, "
            f"{meta.get('clock', 'cpu')} time; {versions}.")


def write_json(path, meta, rows):
    """Write the run's settings and rows as JSON."""
    with open(path, "w", encoding="utf-8") as fh:
        json.dump({"meta": meta, "rows": rows}, fh, indent=2)
        fh.write("\n")
