"""Run one GradBench eval against a tool without Docker, and summarise it (docs/gradbench.md).

    python -m bench.gradbench.pipe 'EVAL COMMAND' ['TOOL COMMAND']

Both commands run through the shell; the tool defaults to dg (`python -m bench.gradbench`
with this Python). Each message the eval writes goes to the tool and each answer back to the
eval, one JSON object per line. Printed: one line per evaluation once the eval has judged it
(`ok` or `BAD`, function, description, the tool's median run, the wall time of the exchange,
the number of runs the tool timed),
then `gradbench EVAL: V valid, I invalid, F failed of N evaluations`. Exit status 0 only when
every evaluation is valid.
"""

import json
import shlex
import subprocess
import sys
import time


def median_ms(response):
    """The median of the `evaluate` timings a tool reported, in milliseconds, and their count."""
    runs = sorted(t["nanoseconds"] for t in response.get("timings") or () if t.get("name") == "evaluate")
    return (runs[len(runs) // 2] / 1e6 if runs else 0.0), len(runs)


def pipe(eval_command, tool_command, out=sys.stdout):
    """Connect the eval to the tool until the eval ends; return (valid, invalid, failed) counts."""
    ev = subprocess.Popen(eval_command, shell=True, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    tool = subprocess.Popen(tool_command, shell=True, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    name, asked, counts = "?", {}, {"valid": 0, "invalid": 0, "failed": 0}
    try:
        for line in ev.stdout:
            message = json.loads(line)
            kind = message.get("kind")
            name = message.get("eval", name) if kind == "start" else name
            started = time.perf_counter()
            tool.stdin.write(line if line.endswith("\n") else line + "\n")
            tool.stdin.flush()
            if kind == "end":           # the last message: nobody answers it
                break
            answer_line = tool.stdout.readline()
            wall_ms = (time.perf_counter() - started) * 1e3
            if not answer_line:
                out.write(f"the tool stopped answering at message {message.get('id')} ({kind})\n")
                counts["failed"] += 1
                break
            answer = json.loads(answer_line)
            if kind == "evaluate":
                asked[message["id"]] = (message["function"], message.get("description", ""),
                                        median_ms(answer), wall_ms)
                if not answer.get("success"):
                    counts["failed"] += 1
                    out.write(f"FAILED {message['function']} {message.get('description', '')}: "
                              f"{str(answer.get('error'))[:300]}\n")
            elif kind == "analysis" and message.get("of") in asked:
                function, description, (median, runs), wall = asked.pop(message["of"])
                counts["valid" if message.get("valid") else "invalid"] += 1
                out.write(f"{'ok ' if message.get('valid') else 'BAD'} {function:12s} {description:12s} "
                          f"median run {median:10.3f} ms  wall {wall:9.1f} ms  runs {runs}\n")
            ev.stdin.write(answer_line)
            ev.stdin.flush()
    except BrokenPipeError:
        out.write("a side closed its input early\n")
        counts["failed"] += 1
    finally:
        for process in (ev, tool):
            try:
                process.stdin.close()
            except OSError:
                pass
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
    total = sum(counts.values())
    out.write(f"gradbench {name}: {counts['valid']} valid, {counts['invalid']} invalid, "
              f"{counts['failed']} failed of {total} evaluations\n")
    return counts


def main(argv=None):
    """Command line: EVAL COMMAND, then optionally TOOL COMMAND."""
    argv = sys.argv[1:] if argv is None else argv
    if not 1 <= len(argv) <= 2:
        sys.stderr.write(__doc__)
        return 2
    tool = argv[1] if len(argv) == 2 else f"{shlex.quote(sys.executable)} -m bench.gradbench"
    counts = pipe(argv[0], tool)
    return 0 if counts["valid"] and not counts["invalid"] and not counts["failed"] else 1


if __name__ == "__main__":
    sys.exit(main())
