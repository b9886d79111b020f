"""The documentation of the numeric constants (dsl/builtins/core.py's CONSTANTS) and of numpy's
trigonometric, hyperbolic and logistic functions, in the form of dsl/builtins/docs.py, which
merges it."""

NAMES = ["pi", "e", "inf", "nan"]
FUNCTIONS = ["tan", "asin", "acos", "atan", "atan2", "sinh", "cosh", "asinh", "acosh", "atanh", "log_sigmoid",
             "logit", "logaddexp"]

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
    "tan": """tan(x): the tangent, elementwise.
Differentiable: yes (1 + tan(x)^2).
>>> tan(0.0)
0.0""",
    "asin": """asin(x): the arcsine (numpy's arcsin), in [-pi/2, pi/2]; nan outside [-1, 1].
Differentiable: yes (1 / sqrt(1 - x^2); infinite at -1 and 1).
>>> asin(1.0)
1.5707963267948966""",
    "acos": """acos(x): the arccosine (numpy's arccos), in [0, pi]; nan outside [-1, 1].
Differentiable: yes (-1 / sqrt(1 - x^2)).
>>> acos(1.0)
0.0""",
    "atan": """atan(x): the arctangent (numpy's arctan), in (-pi/2, pi/2).
Differentiable: yes (1 / (1 + x^2)).
>>> atan(1.0) * 4.0
3.141592653589793""",
    "atan2": """atan2(y, x): the angle of the point (x, y), in [-pi, pi] (numpy's arctan2), with broadcasting.
Differentiable: yes, in y (x / (x^2 + y^2)) and x (-y / (x^2 + y^2)).
>>> atan2(1.0, -1.0)
2.356194490192345""",
    "sinh": """sinh(x): the hyperbolic sine, elementwise.
Differentiable: yes (cosh(x)).
>>> sinh(0.0)
0.0""",
    "cosh": """cosh(x): the hyperbolic cosine, elementwise.
Differentiable: yes (sinh(x)).
>>> cosh(0.0)
1.0""",
    "asinh": """asinh(x): the inverse hyperbolic sine (numpy's arcsinh).
Differentiable: yes (1 / sqrt(x^2 + 1)).
>>> asinh(0.0)
0.0""",
    "acosh": """acosh(x): the inverse hyperbolic cosine (numpy's arccosh); nan below 1.
Differentiable: yes (1 / sqrt(x^2 - 1)).
>>> acosh(1.0)
0.0""",
    "atanh": """atanh(x): the inverse hyperbolic tangent (numpy's arctanh); infinite at -1 and 1.
Differentiable: yes (1 / (1 - x^2)).
>>> atanh(0.0)
0.0""",
    "log_sigmoid": """log_sigmoid(x): ln(sigmoid(x)) = -softplus(-x), without overflow for large |x|.
Differentiable: yes (sigmoid(-x)).
>>> log_sigmoid(-1000.0)
-1000.0""",
    "logit": """logit(p): ln(p / (1 - p)), the inverse of sigmoid; -inf at 0, inf at 1, nan outside.
Differentiable: yes (1 / (p (1 - p))).
>>> logit(0.5)
0.0""",
    "logaddexp": """logaddexp(a, b): ln(exp(a) + exp(b)) without overflow (numpy's), with broadcasting.
Differentiable: yes, in a and b (the softmax of the two).
>>> logaddexp(1000.0, 1000.0)
1000.6931471805599""",
}
