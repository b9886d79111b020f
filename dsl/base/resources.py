"""Find the grammar and the standard library in every install mode.

A wheel carries them inside the package (dsl/_grammar, dsl/_stdlib); an
editable install or a plain checkout has them beside the package (grammar/,
stdlib/). Looking in the package first and then in the checkout works in both.
"""

from pathlib import Path

_PACKAGE = Path(__file__).resolve().parent.parent      # dsl/, this file being dsl/base/resources.py
_CHECKOUT = _PACKAGE.parent


def _find(inside, beside):
    """Return the first existing directory of the two candidates."""
    for candidate in (_PACKAGE / inside, _CHECKOUT / beside):
        if candidate.is_dir() and any(candidate.iterdir()):
            return candidate
    raise FileNotFoundError(f"dg cannot find its {beside}/ directory "
                            f"(looked in {_PACKAGE / inside} and {_CHECKOUT / beside})")


def grammar_path():
    """Return the path of the lark grammar file."""
    return _find("_grammar", "grammar") / "dg.lark"


def stdlib_dir():
    """Return the directory holding the standard library's .dg modules."""
    return _find("_stdlib", "stdlib")
