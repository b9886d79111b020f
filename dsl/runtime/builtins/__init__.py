"""The names a dg program sees without importing anything (reference sections 5, 6 and 9): each
family in a module of its own, their documentation in docs.py and docs_*.py (plain data, which
the Pygments lexer reads without loading numpy), the table an interpreter starts with in table.py."""
