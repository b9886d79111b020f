"""Regenerate exam_scores.csv, the synthetic data set of examples/csv_logistic.dg.

Each row is a student: hours studied in the week before the exam, hours slept
the night before, practice tests taken, and whether they passed (1) or not (0).
Passing follows a logistic model, so logistic regression is the right fit:
    logit = -13.0 + 1.0 * hours_studied + 0.6 * hours_slept + 0.5 * practice_tests
Run: python examples/data/make_exam_scores.py
"""

from pathlib import Path

import numpy as np

rng = np.random.default_rng(2024)
n = 240
studied = np.clip(rng.gamma(4.0, 2.0, n), 0, 30).round(1)
slept = np.clip(rng.normal(7.0, 1.3, n), 3, 11).round(1)
tests = rng.integers(0, 6, n)
logit = -13.0 + 1.0 * studied + 0.6 * slept + 0.5 * tests
passed = (rng.random(n) < 1 / (1 + np.exp(-logit))).astype(int)

lines = ["hours_studied,hours_slept,practice_tests,passed"]
lines += [f"{a},{b},{c},{d}" for a, b, c, d in zip(studied, slept, tests, passed)]
Path(__file__).with_name("exam_scores.csv").write_text("\n".join(lines) + "\n")
