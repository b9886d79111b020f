"""Backends: staged programs (core/stage.py) compiled to code. Today's backend writes Python
source calling numpy (codegen.py), the kernels that code calls (kernels.py), the plan of what a
program keeps and frees (optimize.py), and the back-off of a fast path that keeps missing.
The XLA backend (xla/) lowers the same programs to XLA through JAX, where JAX is installed.
Imports the core and the base layer."""
