"""The runtime: a resolved program compiled to closures and run. Expressions (compiler.py),
statements and functions (statements.py, targets.py), fusion of straight-line runs (fusion.py),
the builtins a program calls (builtins/), the Interpreter (interpreter.py) and its Python API's
conversions (embed.py). It sits on the transformations: a loop reaches jit's roller directly."""
