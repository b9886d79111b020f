"""dg: a small differentiable programming language.

    import dsl
    interp = dsl.Interpreter()
    interp.run("fn f(x) { return x * x }")
    interp.grad("f")(3.0)        # 6.0
"""

from .errors import DgError
from .interpreter import Interpreter
from .tape_view import TapeRow, format_tape, tape_dot, tape_rows
from .values import Struct, make_struct

__version__ = "0.1.0"
__all__ = ["Interpreter", "DgError", "Struct", "make_struct", "TapeRow", "tape_rows", "format_tape", "tape_dot",
           "__version__"]
