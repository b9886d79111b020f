"""The language examples in examples/ print exactly what they should (SPEC sections 2-4 and 7)."""

import io
from pathlib import Path

import pytest

import dsl

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"

CLOSURES = """\
add2(5) = 7 and add10(5) = 15
compose(add2, add10)(0) = 12
x**0 at x=3 is 1
x**1 at x=3 is 3
x**2 at x=3 is 9
x**3 at x=3 is 27
label is second
counter after 3 ticks: Counter(count=15, step=5)
 double(7) = 14
 square(7) = 49
 negate(7) = -7
model on batch: [[2.5], [-1.5]]
"""

STRUCTS_AND_MAPS = """\
Point(x=1.0, y=2.0) Point(x=4.0, y=6.0) true
length: 5.0
moved:  Segment(start=Point(x=1.0, y=2.0), end=Point(x=1.0, y=6.0))
seg:    Segment(start=Point(x=1.0, y=2.0), end=Point(x=4.0, y=6.0))
lengths: 5.0 4.0
{"apples": 5, "pears": 0, "plums": 12} keys: ("apples", "pears", "plums")
has pears: true, kiwis (0 if none): 0
after remove: {"apples": 5, "plums": 12} original still has 3 keys
  apples     5
  plums     12
{"model": {"layers": (16, 8), "act": "relu"}, "lr": 0.1}
{"model": {"layers": (16, 32), "act": "relu"}, "lr": 0.05}
equal maps: true | after a change: false
layer output: [2.5, 5.5] type: Linear
"""

TEXT_AND_FSTRINGS = """\
Welcome to dg v0.1!
a tab:	|, a quote: ", a backslash: \\
set notation: {1, 2} has 2 elements
[3.14] [    3.1416] [3.142     ] [   3.1    ] [3.141593e+00]
[00042] [+42] [-42] [1,234,567] [25.6%] [ff] [0b11111111]
[left****] [***right] [***mid***]
activation | accuracy | steps
-------------------------------
relu       |   93.12% |   120
tanh       |   88.75% |    95
sigmoid    |   74.21% |   310
d e ffer elbaitnereffid 14
ababab! true
d.g.
{"name": "dg", "tags": ("small", "typed"), "ok": true}
as text: {"name": "dg", "tags": ("small", "typed"), "ok": true}
losses [0.693147, 0.312, 0.0456] rounded [0.69, 0.31, 0.05]
mean 0.3502, best 0.0456, steps 3
floats print short: 0.30000000000000004 0.3333333333333333 1e-05 1.1805916207174113e+21
"""

RECURSION = """\
fib: (0, 1, 1, 2, 3, 5, 8, 13, 21, 34, 55, 89)
fib(22) = 17711
30! = 265252859812191058636308480000000
17 is odd: true | 40 is even: true
gcd(1071, 462) = 21 | 3**40 = 12157665459056928801 true
hanoi(3): 7 moves, first ("A", "C"), last ("A", "C")
tree total: 385 | depth: 4 | sorted: (20, 30, 35, 40, 50, 60, 70, 80)
leaves: 6
index of 42: 14 | index of 43: -1
"""

EXPECTED = {"closures": CLOSURES, "structs_and_maps": STRUCTS_AND_MAPS,
            "text_and_fstrings": TEXT_AND_FSTRINGS, "recursion": RECURSION}


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_example_output(name):
    out = io.StringIO()
    dsl.Interpreter(stdout=out).run_file(EXAMPLES / f"{name}.dg")
    assert out.getvalue() == EXPECTED[name]


ERRORS_DEMO_OUT = """\
momentum: 0.9 | has steps: true
the learning rate is positive
1.0 / 0 = inf | -1 / 0.0 = -inf | 0.0 / 0 = nan
at least two positive entries in [1.0, -2.0, 3.0]
add_checked: shapes (2,) and (3,) differ, using the first
[1.0, 1.0]
a tuple holds anything: ("loss", 0.25, [1.0, 2.0])
predicting...
"""

ERRORS_DEMO_ERR = """\
error[shape]: cannot matmul tensors of shapes (1, 4) and (5, 2) (inner sizes 4 and 5 differ)
  --> examples/errors_demo.dg:42:31
   |
42 | fn forward(layer, x) { return x @ layer.w + layer.b }
   |                               ^^^^^^^^^^^
   = in forward, called at examples/errors_demo.dg:45:31
   = in predict, called at examples/errors_demo.dg:50:1
"""


def test_errors_demo_prints_then_reports_its_deliberate_error(dg):
    result = dg("run", "examples/errors_demo.dg", cwd=ROOT)
    assert result.returncode == 1
    assert result.stdout == ERRORS_DEMO_OUT
    assert result.stderr == ERRORS_DEMO_ERR


@pytest.mark.parametrize("name", sorted(EXPECTED) + ["errors_demo"])
def test_example_passes_dg_check_and_says_how_to_run_it(name, capsys):
    from dsl import cli
    path = EXAMPLES / f"{name}.dg"
    assert cli.main(["check", str(path)]) == 0
    assert f"dg run examples/{name}.dg" in path.read_text()
    assert f"dg run examples/{name}.dg" in (ROOT / "docs" / "examples.md").read_text()
