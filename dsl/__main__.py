"""`python -m dsl` is the `dg` command."""

from .cli import entry

entry()
