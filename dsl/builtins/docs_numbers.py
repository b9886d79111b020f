"""The documentation of the numeric constants (dsl/builtins/core.py's CONSTANTS), in the form of
dsl/builtins/docs.py, which merges it."""

NAMES = ["pi", "e", "inf", "nan"]

DOCS = {
    "pi": """pi: the float 3.141592653589793, a circle's circumference over its diameter.
Differentiable: no (a constant).
>>> cos(pi)
-1.0""",
    "e": """e: the float 2.718281828459045, the base of ln.
Differentiable: no (a constant).
>>> ln(e)
1.0""",
    "inf": """inf: the float infinity (IEEE), as numpy's inf; -inf is its negative.
Differentiable: no (a constant).
>>> 1.0 / inf
0.0""",
    "nan": """nan: the float not-a-number (IEEE), as numpy's nan; nan == nan is false.
Differentiable: no (a constant).
>>> nan == nan
false""",
}
