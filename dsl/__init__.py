"""dg: a small differentiable programming language.

    import dsl
    interp = dsl.Interpreter()
    interp.run("fn f(x) { return x * x }")
    interp.grad("f")(3.0)        # 6.0

The names below load on first use, so that importing a light submodule (the
Pygments lexer, say) does not pull in numpy and the interpreter.
"""

__version__ = "0.1.0"

_EXPORTS = {
    "Interpreter": "runtime.interpreter", "DgError": "errors", "Struct": "core.values", "make_struct": "core.values",
    "TapeRow": "runtime.tape_view", "tape_rows": "runtime.tape_view", "format_tape": "runtime.tape_view",
    "tape_dot": "runtime.tape_view",
}
__all__ = list(_EXPORTS) + ["__version__"]


def __getattr__(name):
    """Import an exported name's module when the name is first used."""
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'dsl' has no attribute {name!r}")
    from importlib import import_module     # start-up: the lazy exports above exist for it
    value = getattr(import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value


def __dir__():
    """List the lazily exported names too."""
    return sorted(list(globals()) + list(_EXPORTS))
