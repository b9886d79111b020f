"""The package's layers (docs/architecture.md, "The layers"): each layer imports only from the
layers below it, no import circle (counting imports inside functions, and the package __init__s an
import runs), an import inside a function only with its reason beside it, no module over 600 lines.
"""

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "dsl"
LAYERS = ["base", "frontend", "core", "backends", "transform", "runtime", "faces"]
MAX_LINES = 600


# ---------------------------------------------------------------- the import graph
def module_name(path):
    """dsl.core.ops.shape for dsl/core/ops/shape.py; a package by its folder's name."""
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {module_name(p): p for p in PACKAGE.rglob("*.py")}


def layer_of(module):
    """A module's layer: its folder under dsl/; the modules at the root are the faces, except
    errors (imported as dsl.errors by users, the base of everything) and the package itself."""
    parts = module.split(".")
    if len(parts) > 1 and parts[1] in LAYERS:
        return parts[1]
    return "base" if module in ("dsl", "dsl.errors") else "faces"


def _targets(module, node):
    """The dsl modules an import statement in `module` names (resolving relative imports)."""
    if isinstance(node, ast.Import):
        return [a.name for a in node.names if a.name.split(".")[0] == "dsl"]
    if node.level:
        base = module.split(".")
        if not MODULES[module].name == "__init__.py":
            base = base[:-1]
        base = base[:len(base) - (node.level - 1)]
        source = ".".join(base + ([node.module] if node.module else []))
    else:
        source = node.module or ""
    if source.split(".")[0] != "dsl":
        return []
    return [f"{source}.{a.name}" if f"{source}.{a.name}" in MODULES else source for a in node.names]


def _with_packages(module, target):
    """The target and every package above it that importing it runs (its own packages excepted)."""
    own = {".".join(module.split(".")[:i]) for i in range(1, module.count(".") + 1)}
    parts = target.split(".")
    return {".".join(parts[:i]) for i in range(1, len(parts) + 1)} - own - {module}


def import_graph():
    """module -> {(imported module, line, inside a function, the line's text)}."""
    graph = {}
    for module, path in MODULES.items():
        text = path.read_text()
        lines = text.split("\n")
        edges = set()

        def walk(node, inside):
            for child in ast.iter_child_nodes(node):
                if isinstance(child, (ast.Import, ast.ImportFrom)):
                    for target in _targets(module, child):
                        for t in _with_packages(module, target):
                            if t in MODULES:
                                edges.add((t, child.lineno, inside, lines[child.lineno - 1]))
                walk(child, inside or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)))
        walk(ast.parse(text), False)
        graph[module] = edges
    return graph


def find_circle(graph):
    """A list of modules that import each other round in a circle, or None."""
    state, stack = {}, []

    def visit(m):
        state[m] = "open"
        stack.append(m)
        for t in sorted(graph.get(m, ())):
            if state.get(t) == "open":
                return stack[stack.index(t):] + [t]
            if t not in state:
                found = visit(t)
                if found:
                    return found
        state[m] = "done"
        stack.pop()
        return None

    for m in sorted(graph):
        if m not in state:
            found = visit(m)
            if found:
                return found
    return None


GRAPH = import_graph()


# ---------------------------------------------------------------- the rules
def test_every_module_has_a_layer_and_the_folders_are_the_layers():
    folders = {p.name for p in PACKAGE.iterdir() if p.is_dir() and p.name != "__pycache__"}
    assert folders == set(LAYERS) - {"faces"}
    assert {layer_of(m) for m in MODULES} == set(LAYERS)


def test_each_layer_imports_only_from_below():
    upward = [f"{m} ({layer_of(m)}) imports {t} ({layer_of(t)}) at line {line}"
              for m, edges in GRAPH.items() for t, line, _, _ in edges
              if LAYERS.index(layer_of(t)) > LAYERS.index(layer_of(m))]
    assert upward == []


def test_no_import_circle():
    graph = {m: {t for t, _, _, _ in edges} for m, edges in GRAPH.items()}
    assert find_circle(graph) is None


def test_the_circle_finder_finds_one():
    """The check above can fail: a new import that closes a circle, however long, is found."""
    graph = {m: {t for t, _, _, _ in edges} for m, edges in GRAPH.items()}
    graph["dsl.base.limits"] = graph["dsl.base.limits"] | {"dsl.runtime.interpreter"}
    circle = find_circle(graph)
    assert circle is not None and circle[0] == circle[-1] and "dsl.base.limits" in circle
    assert find_circle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) in (["a", "b", "c", "a"],)


def test_an_import_inside_a_function_says_why():
    """Only for an optional dependency or start-up time, with the reason on its line."""
    silent = []
    for module, path in MODULES.items():
        lines = path.read_text().split("\n")
        for fn in ast.walk(ast.parse("\n".join(lines))):
            if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
                silent += [f"{module}:{n.lineno}: {lines[n.lineno - 1].strip()}" for n in ast.walk(fn)
                           if isinstance(n, (ast.Import, ast.ImportFrom)) and "#" not in lines[n.lineno - 1]]
    assert silent == []


@pytest.mark.parametrize("module", sorted(MODULES))
def test_no_module_over_600_lines(module):
    assert len(MODULES[module].read_text().split("\n")) <= MAX_LINES
