"""Hypothesis strategies that make dg inputs for the fuzz tests (tests/fuzz/test_fuzz.py).

- `soup()`: random text from dg's own tokens, brackets, quotes and junk.
- `mutated_examples()`: the example programs with tokens deleted, duplicated,
  swapped or replaced.
- `programs()`: grammar-generated programs of bounded size that use structs,
  maps, tuples, closures, loops and `grad`. A small type discipline (each
  variable has a kind) makes most of them run to the end, so the runtime and
  the gradients are exercised, not only the parser; now and then an
  expression of the wrong kind is put in on purpose to reach error paths.
- `builtin_calls(names)`, `operator_uses()`: every builtin, operator, index
  and field read on odd values (big ints, NaN, empty and 0-d tensors, strings,
  functions, odd file paths, ...), directly and inside `grad`/`jacobian`.
- `risky(leaves)`: a scalar expression of the given leaves whose derivatives may be
  infinite or NaN at some points (the numerics check's tests).
"""

import re
from pathlib import Path

from hypothesis import strategies as st

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = sorted((ROOT / "examples").glob("*.dg"))

# ---------------------------------------------------------------- token soup
TOKENS = [
    "let", "fn", "return", "if", "else", "while", "for", "in", "struct", "import", "as", "true", "false",
    "none", "and", "or", "not", "break", "continue", "x", "y", "f", "g", "p", "nn", "optim", "S", "w",
    "grad", "value_and_grad", "jacobian", "hessian", "print", "zeros", "ones", "sum", "range", "tree_map",
    "custom_vjp", "checkpoint", "stop_gradient", "reshape", "cat", "stack", "len", "type", "str",
    "0", "1", "2", "3", "0.5", "1e308", "1e-3", "2.", "99999999999999999999", '"s"', '"\\n"', 'f"{x}"',
    'f"{x:.3f}"', 'f"{', '"', "+", "-", "*", "/", "//", "%", "**", "@", "=", "==", "!=", "<", "<=", ">",
    ">=", "+=", "-=", "*=", "/=", "=>", ",", ";", ":", ".", "(", ")", "[", "]", "{", "}", "\n", " ",
    "#", "\t", "\r", "!", "?", "$", "'", "\\", "\x00", "é", "λ", "\u200b",
]


def soup():
    """Random sequences of dg tokens and junk characters."""
    return st.lists(st.sampled_from(TOKENS), max_size=60).map(
        lambda toks: "".join(t if t in "\n (){}[],;:.\t\r" else f" {t}" for t in toks))


# ---------------------------------------------------------------- mutated examples
_TOKEN_RE = re.compile(r'f?"(?:[^"\\\n]|\\.)*"|#[^\n]*|\d+\.?\d*(?:[eE][-+]?\d+)?|[A-Za-z_]\w*'
                       r'|\*\*|//|==|!=|<=|>=|=>|[-+*/]=|\n|[ \t]+|.')


def tokens_of(text):
    """Split dg source into tokens, keeping whitespace and comments, so joining gives it back."""
    return _TOKEN_RE.findall(text)


_EXAMPLE_TOKENS = [(p, tokens_of(p.read_text(encoding="utf-8"))) for p in EXAMPLES]


def mutate(tokens, edits):
    """Apply edits (kind, i, j) to a token list: delete, duplicate, swap or replace tokens."""
    toks = list(tokens)
    for kind, i, j in edits:
        if not toks:
            break
        i, j = i % len(toks), j % len(toks)
        if kind == "delete":
            del toks[i]
        elif kind == "duplicate":
            toks.insert(i, toks[i])
        elif kind == "swap":
            toks[i], toks[j] = toks[j], toks[i]
        else:
            toks[i] = toks[j]
    return "".join(toks)


EDIT = st.tuples(st.sampled_from(["delete", "duplicate", "swap", "replace"]),
                 st.integers(0, 10 ** 6), st.integers(0, 10 ** 6))


@st.composite
def mutated_examples(draw):
    """(path of an example program, its text with 1 to 4 token edits)."""
    path, toks = draw(st.sampled_from(_EXAMPLE_TOKENS))
    return path, mutate(toks, draw(st.lists(EDIT, min_size=1, max_size=4)))


# ---------------------------------------------------------------- generated programs
# Kinds of values: f float, i int, b bool, s string, t tensor (3,), m tensor (3, 3),
# P struct P { w: f, b: t }, M map {"w": f, "v": t}, T tuple (f, t), F function f -> f.
KINDS = ["f", "i", "b", "s", "t", "m", "P", "M", "T", "F"]
PRELUDE = "struct P { w, b }\nstruct Q { a, p }\n"
FLOATS = ["0.5", "1.0", "-2.0", "3.25", "1e-3", "0.0", "2.5", "1e300", '-float("inf")', 'float("nan")']
UNARY_F = ["exp", "sin", "cos", "tanh", "sigmoid", "relu", "abs", "sqrt", "ln", "silu", "gelu"]
UNARY_T = UNARY_F + ["softmax", "log_softmax"]


class Generator:
    """Builds one program from hypothesis draws, keeping track of which names hold which kinds."""

    def __init__(self, draw, wrong_rate=0.03):
        self.draw = draw
        self.scopes = [{}]          # each block scope: name -> kind
        self.assignable = [set()]   # per function: names it may assign (its own locals)
        self.n = 0
        self.wrong_rate = wrong_rate
        self.imports = set()        # stdlib modules the program uses (importing costs a parse)

    # -- helpers ---------------------------------------------------------
    def pick(self, options):
        """One of `options`."""
        return self.draw(st.sampled_from(options))

    def chance(self, p):
        """True with probability about p."""
        return self.draw(st.integers(0, 999)) < p * 1000

    def fresh(self, prefix="v"):
        """A new variable name."""
        self.n += 1
        return f"{prefix}{self.n}"

    def names(self, kind):
        """Visible names of one kind."""
        return sorted({n for scope in self.scopes for n, k in scope.items() if k == kind})

    def declare(self, name, kind):
        """Add a name to the innermost scope (and make it assignable in this function)."""
        self.scopes[-1][name] = kind
        self.assignable[-1].add(name)

    # -- expressions -----------------------------------------------------
    def expr(self, kind, depth):
        """An expression of `kind` (occasionally, on purpose, of another kind)."""
        if self.wrong_rate and self.chance(self.wrong_rate):
            kind = self.pick(KINDS)
        known = self.names(kind)
        if depth <= 0 or self.chance(0.25):
            if known and self.chance(0.6):
                return self.pick(known)
            return self.leaf(kind)
        return getattr(self, "e_" + kind)(depth - 1)

    def leaf(self, kind):
        """A literal or simple constructor of `kind`."""
        return {
            "f": lambda: self.pick(FLOATS), "i": lambda: self.pick(["0", "1", "2", "-3", "7", "10 ** 20"]),
            "b": lambda: self.pick(["true", "false"]), "s": lambda: self.pick(['"a"', '""', '"w\\n"']),
            "t": lambda: self.pick(["zeros((3,))", "ones((3,))", "[1.0, -2.0, 0.5]", "arange(3.0)"]),
            "m": lambda: self.pick(["eye(3)", "reshape(arange(9.0), (3, 3))", "ones((3, 3))"]),
            "P": lambda: "P(w=1.5, b=ones((3,)))", "M": lambda: '{"w": 0.5, "v": arange(3.0)}',
            "T": lambda: "(2.0, [1.0, 2.0, 3.0])", "F": lambda: "fn(z) => z * 2.0",
        }[kind]()

    def e_f(self, d):
        """A float expression."""
        e = self.expr
        form = self.draw(st.integers(0, 15))
        if form == 0:
            return f"({e('f', d)} {self.pick(['+', '-', '*', '/', '**'])} {e('f', d)})"
        if form == 1:
            return f"-{e('f', d)}"
        if form == 2:
            return f"{self.pick(UNARY_F)}({e('f', d)})"
        if form == 3:
            return f"{self.pick(['sum', 'mean', 'max', 'min', 'logsumexp'])}({e('t', d)})"
        if form == 4:
            return f"{e('t', d)}[{self.pick(['0', '1', '2', '-1'])}]"
        if form == 5:
            return f"{e('P', d)}.w"
        if form == 6:
            return f'{e("M", d)}["w"]'
        if form == 7:
            return f"{e('T', d)}[0]"
        if form == 8:
            return f"{e('F', d)}({e('f', d)})"
        if form == 9:
            return f"grad({e('F', d)})({e('f', d)})"
        if form == 10:
            return f"value_and_grad({e('F', d)})({e('f', d)})[{self.pick(['0', '1'])}]"
        if form == 11:
            return f"float({e('i', d)})"
        if form == 12:
            return f"(fn(q) => {self.with_param('q', 'f', lambda: e('f', d))})({e('f', d)})"
        if form == 13:
            return f"grad(fn(p) => p.w * sum(p.b) + {e('f', d)})({e('P', d)}).w"
        if form == 14:
            return f"hessian({e('F', d)})({e('f', d)})"
        return f"global_norm({e(self.pick(['P', 'M', 'T']), d)})"

    def e_i(self, d):
        """An int expression."""
        e = self.expr
        form = self.draw(st.integers(0, 4))
        if form == 0:
            return f"({e('i', d)} {self.pick(['+', '-', '*', '//', '%'])} {e('i', d)})"
        if form == 1:
            return f"len({e(self.pick(['t', 'T', 's', 'M']), d)})"
        if form == 2:
            return f"int({e('f', d)})"
        if form == 3:
            return f"size({e('m', d)})"
        return f"({e('i', d)} ** {self.pick(['0', '2', '3'])})"

    def e_b(self, d):
        """A bool expression."""
        e = self.expr
        form = self.draw(st.integers(0, 4))
        if form == 0:
            return f"({e('f', d)} {self.pick(['<', '<=', '>', '>=', '==', '!='])} {e('f', d)})"
        if form == 1:
            return f"not {e('b', d)}"
        if form == 2:
            return f"({e('b', d)} {self.pick(['and', 'or'])} {e('b', d)})"
        if form == 3:
            key = self.pick(['"w"', '"z"', "1"])
            return f'has({e("M", d)}, {key})'
        return f"({e('i', d)} < {e('i', d)})"

    def e_s(self, d):
        """A string expression."""
        e = self.expr
        form = self.draw(st.integers(0, 3))
        if form == 0:
            return f'f"{{{e("f", d)}:{self.pick([".3f", ">8", "e", "", "+.1%"])}}} {{{e("t", d)}}}"'
        if form == 1:
            return f"str({e(self.pick(KINDS), d)})"
        if form == 2:
            return f"({e('s', d)} + {e('s', d)})"
        return f"type({e(self.pick(KINDS), d)})"

    def e_t(self, d):
        """A tensor expression of shape (3,)."""
        e = self.expr
        form = self.draw(st.integers(0, 12))
        if form == 0:
            return f"[{e('f', d)}, {e('f', d)}, {e('f', d)}]"
        if form == 1:
            return f"({e('t', d)} {self.pick(['+', '-', '*', '/'])} {e(self.pick(['t', 'f']), d)})"
        if form == 2:
            return f"{self.pick(UNARY_T)}({e('t', d)})"
        if form == 3:
            return f"{e('P', d)}.b"
        if form == 4:
            return f'{e("M", d)}["v"]'
        if form == 5:
            return f"({e('m', d)} @ {e('t', d)})"
        if form == 6:
            return f"where({e('t', d)} > {e('f', d)}, {e('t', d)}, {e('t', d)})"
        if form == 7:
            return f"clamp({e('t', d)}, -1.0, 1.0)"
        if form == 8:
            return f"grad(fn(x) => sum(x * {e('t', d)}))({e('t', d)})"
        if form == 9:
            return f"cat(({e('t', d)}[0:1], {e('t', d)}[1:3]))"
        if form == 10:
            return f"tree_map(fn(a) => a * 0.5, {e('t', d)})"
        if form == 11:
            return f"{e('T', d)}[1]"
        return f"stop_gradient({e('t', d)})"

    def e_m(self, d):
        """A 3x3 tensor expression."""
        e = self.expr
        form = self.draw(st.integers(0, 4))
        if form == 0:
            return f"({e('m', d)} {self.pick(['+', '*', '@', '-'])} {e('m', d)})"
        if form == 1:
            return f"transpose({e('m', d)})"
        if form == 2:
            return f"stack(({e('t', d)}, {e('t', d)}, {e('t', d)}))"
        if form == 3:
            return f"jacobian(fn(x) => x * {e('t', d)})({e('t', d)})"
        return f"({e('m', d)} * {e('f', d)})"

    def e_P(self, d):
        """A struct P expression."""
        e = self.expr
        form = self.draw(st.integers(0, 3))
        if form == 0:
            return f"P(w={e('f', d)}, b={e('t', d)})"
        if form == 1:
            return f"P({e('f', d)}, {e('t', d)})"
        if form == 2:
            return f"tree_map(fn(a) => a * 2.0, {e('P', d)})"
        return f"grad(fn(p) => p.w ** 2.0 + sum(p.b * {e('t', d)}))({e('P', d)})"

    def e_M(self, d):
        """A map expression with keys "w" and "v"."""
        e = self.expr
        form = self.draw(st.integers(0, 2))
        if form == 0:
            return f'{{"w": {e("f", d)}, "v": {e("t", d)}}}'
        if form == 1:
            return f'grad(fn(m) => m["w"] * sum(m["v"]))({e("M", d)})'
        return f"tree_map(fn(a, b) => a + b, {e('M', d)}, {e('M', d)})"

    def e_T(self, d):
        """A tuple (float, tensor) expression."""
        e = self.expr
        form = self.draw(st.integers(0, 2))
        if form == 0:
            return f"({e('f', d)}, {e('t', d)})"
        if form == 1:
            return f"grad(fn(a) => a[0] * sum(a[1]))({e('T', d)})"
        return f"value_and_grad(fn(a, b) => a * b, argnums=(0, 1))({e('f', d)}, {e('f', d)})[1]"

    def e_F(self, d):
        """A function from float to float."""
        e = self.expr
        form = self.draw(st.integers(0, 3))
        if form == 0:
            return f"fn(x) => {self.with_param('x', 'f', lambda: e('f', d))}"
        if form == 1:
            return f"grad({e('F', d)})"
        if form == 2:
            f1, f2 = e("F", d), e("F", d)
            return f"fn(x) => ({f1})(({f2})(x))"
        return f"checkpoint({e('F', d)})"

    def with_param(self, name, kind, make):
        """Generate with a lambda parameter in scope (a new function: no outer assignments)."""
        self.scopes.append({name: kind})
        self.assignable.append({name})
        try:
            return make()
        finally:
            self.scopes.pop()
            self.assignable.pop()

    # -- statements ------------------------------------------------------
    def block(self, depth, indent, in_loop=False, in_fn=False):
        """Statements of one block (a new scope)."""
        self.scopes.append({})
        try:
            count = self.draw(st.integers(1 if depth > 0 else 0, 4))
            return [s for _ in range(count) for s in self.stmt(depth, indent, in_loop, in_fn)]
        finally:
            self.scopes.pop()

    def stmt(self, depth, indent, in_loop, in_fn):
        """One statement, as a list of lines."""
        pad = "    " * indent
        d = self.draw(st.integers(0, 3))
        form = self.draw(st.integers(0, 13 if depth > 0 else 6))
        if form <= 1:
            kind = self.pick(KINDS)
            name = self.fresh()
            value = self.expr(kind, d)
            self.declare(name, kind)
            return [f"{pad}let {name} = {value}"]
        if form == 2:
            return [f"{pad}print({self.expr(self.pick(KINDS), d)})"]
        if form == 3:
            mine = [n for n in sorted(self.assignable[-1]) if any(n in s for s in self.scopes)]
            if not mine:
                return [f"{pad}{self.expr(self.pick(KINDS), d)}"]
            name = self.pick(mine)
            kind = next(s[name] for s in reversed(self.scopes) if name in s)
            if kind in ("f", "t", "i") and self.chance(0.5):
                return [f"{pad}{name} {self.pick(['+=', '-=', '*='])} {self.expr(kind, d)}"]
            if kind == "P":
                return [f"{pad}{name}.w = {self.expr('f', d)}"]
            if kind == "M":
                return [f'{pad}{name}["{self.pick(["w", "new"])}"] = {self.expr("f", d)}']
            if kind == "T":
                return [f"{pad}{name}[0] = {self.expr('f', d)}"]
            if kind == "t":
                # an index tensor naming a position twice keeps the last write (numpy's): only it
                # may receive a gradient
                where = self.pick(['0', '1:3', 'tensor([1, 0, 1])', 'tensor([2, 2])', '::-1'])
                return [f"{pad}{name}[{where}] = {self.expr('f', d)}"]
            return [f"{pad}{name} = {self.expr(kind, d)}"]
        if form == 4:
            return [f"{pad}{self.expr(self.pick(KINDS), d)}"]
        if form == 5 and in_loop:
            return [f"{pad}if {self.expr('b', d)} {{ {self.pick(['break', 'continue'])} }}"]
        if form == 6 and in_fn:
            return [f"{pad}if {self.expr('b', d)} {{ return {self.expr('f', d)} }}"]
        if form in (5, 6):
            return [f"{pad}let {self.fresh('u')}, {self.fresh('u')} = {self.expr('T', d)}"]
        if form == 7:
            lines = [f"{pad}if {self.expr('b', d)} {{"] + self.block(depth - 1, indent + 1, in_loop, in_fn)
            if self.chance(0.5):
                lines += [f"{pad}}} else {{"] + self.block(depth - 1, indent + 1, in_loop, in_fn)
            return lines + [f"{pad}}}"]
        if form == 8:
            var = self.fresh("k")
            head, kind = self.pick([(f"range({self.pick(['3', '0', '5'])})", "i"), (self.expr("t", 1), "f"),
                                    (self.expr("T", 1), None)])
            self.scopes.append({var: kind} if kind else {})
            try:
                body = self.block(depth - 1, indent + 1, True, in_fn)
            finally:
                self.scopes.pop()
            return [f"{pad}for {var} in {head} {{"] + body + [f"{pad}}}"]
        if form == 9:
            c = self.fresh("c")
            self.declare(c, "i")
            body = self.block(depth - 1, indent + 1, True, in_fn)
            return ([f"{pad}let {c} = 0", f"{pad}while {c} < {self.pick(['3', '2', '100000'])} {{",
                     f"{pad}    {c} += 1"] + body + [f"{pad}}}"])
        if form == 10:
            return self.function(depth, indent)
        if form == 11:
            k, v = self.fresh("k"), self.fresh("v")
            self.scopes.append({k: "s"})
            try:
                body = self.block(depth - 1, indent + 1, True, in_fn)
            finally:
                self.scopes.pop()
            return [f"{pad}for {k}, {v} in items({self.expr('M', 1)}) {{"] + body + [f"{pad}}}"]
        if form == 12:
            kind, value = "P", f"optim.sgd({self.expr('P', d)}, {self.expr('P', d)}, 0.1)"
            self.imports.add("optim")
        else:
            kind, value = "f", f"nn.mse({self.expr('t', d)}, {self.expr('t', d)})"
            self.imports.add("nn")
        name = self.fresh()
        self.declare(name, kind)
        return [f"{pad}let {name} = {value}"]

    def function(self, depth, indent):
        """A named function of one float parameter (recursive now and then)."""
        pad = "    " * indent
        name = self.fresh("fn")
        self.scopes.append({"a": "f"})
        self.assignable.append({"a"})
        try:
            body = self.block(depth - 1, indent + 1, False, True)
            if self.chance(0.2):
                body.append(f"{pad}    if a > 0.0 {{ return {name}(a - 1.0) }}")
            result = self.expr("f", 2)
        finally:
            self.scopes.pop()
            self.assignable.pop()
        self.declare(name, "F")
        return [f"{pad}fn {name}(a) {{"] + body + [f"{pad}    return {result}", f"{pad}}}"]


@st.composite
def programs(draw, wrong_rate=0.03):
    """A syntactically valid dg program of bounded size."""
    gen = Generator(draw, wrong_rate)
    lines = [PRELUDE.rstrip("\n")]
    for _ in range(draw(st.integers(1, 6))):
        lines += gen.stmt(draw(st.integers(0, 2)), 0, False, False)
    return "".join(f"import {m}\n" for m in sorted(gen.imports)) + "\n".join(lines) + "\n"


# ---------------------------------------------------------------- builtins and operators on odd values
VALUES = [
    "0", "1", "-1", "3", "10 ** 400", "-(10 ** 400)", "2 ** 63", "0.0", "-0.0", "1.5", "1e308",
    'float("nan")', 'float("inf")', '-float("inf")', "true", "false", "none", '"s"', '""', '"3"',
    "zeros((0,))", "zeros((0, 3))", "zeros((3, 0))", "tensor(2.0)", "ones((3,))", "arange(6.0)",
    "reshape(arange(6.0), (2, 3))", "reshape(arange(24.0), (2, 3, 4))", "[true, false, true]",
    '[1.0, float("nan"), float("inf")]', "eye(2) * 10.0 ** 300", "-ones((2, 2))", "one_hot(1, 3)",
    "()", "(1,)", "(2, 3)", "(1.0, ones((3,)))", "((1.0, 2.0), (3.0, 4.0))", "(-1, 2)", "(0,)",
    "{}", '{"a": 1.0}', '{1: 2.0, "b": ones((2,))}', "S(1.0, ones((3,)))", "S",
    "fn(x) => x", "fn(x, y) => x * y", "fn() => 1.0", "fn(x) => ones((2,))", "print", "sum", "grad",
    "range(3)", "range(0)", "batches(ones((4, 2)), ones((4,)), 2)",
    # paths: SCRATCH is replaced by a directory the program may use
    '"SCRATCH/f.ckpt"', '"SCRATCH/t.csv"', '"SCRATCH"', '"SCRATCH/../x.ckpt"', '"/"', '"."', '"a\\0b"',
    '"' + "a" * 300 + '"', '"SCRATCH/' + "b" * 300 + '"',
]
KWARGS = ["axis", "keepdims", "argnums", "eps", "gamma", "beta", "header", "columns", "shuffle",
          "start", "sep", "end", "default", "label", "lo", "hi", "x", "n", "f"]
INDEXES = ["0", "-1", ":", "1:", "::2", "[0.0, 1.0]", "[0.0, 1.0, 2.0]", "[true, false]", "[true, false, true]",
           "zeros((2, 2))", "ones((3,)) > 0", "-5.0", "0.5"]
OPERATORS = ["+", "-", "*", "/", "//", "%", "**", "@", "==", "!=", "<", "<=", ">", ">=", "and", "or"]
PRELUDE_S = "struct S { a, b }\n"


@st.composite
def builtin_calls(draw, names):
    """A call of one builtin on odd values, now and then inside a transformation (TRANSFORMS)."""
    name = draw(st.sampled_from(names))
    args = draw(st.lists(st.sampled_from(VALUES), max_size=4))
    kwargs = draw(st.lists(st.tuples(st.sampled_from(KWARGS), st.sampled_from(VALUES)), max_size=2,
                           unique_by=lambda kv: kv[0]))
    where = draw(st.integers(0, len(TRANSFORMS)))
    if where and args:
        i = draw(st.integers(0, len(args) - 1))
        args[i] = "x"
    call = f"{name}({', '.join(args + [f'{k}={v}' for k, v in kwargs])})"
    if not where or not args:
        return PRELUDE_S + call + "\n"
    point = draw(st.sampled_from(["1.5", "ones((3,))", "reshape(arange(6.0), (2, 3))", "S(1.0, ones((3,)))",
                                  '{"a": 1.0}', "(1.0, 2.0)", "zeros((0,))", "tensor(2.0)"]))
    return PRELUDE_S + TRANSFORMS[where - 1].format(call=call, point=point) + "\n"


# where builtin_calls puts a call with `x` in it, x being the point
TRANSFORMS = [
    "grad(fn(x) => sum(tensor({call})))({point})",
    "jacobian(fn(x) => {call})({point})",
    "jvp(fn(x) => {call}, ({point},), ({point},))",
    "vmap(fn(x) => {call})(tree_map(fn(v) => stack((v, v * 0.5)), {point}))",
    "jit(grad(fn(x) => sum(tensor({call}))))({point})",
    "hessian(fn(x) => sum(tensor({call})))({point})",
    "let vp = vjp(fn(x) => {call}, {point})\nvp[1](vp[0])",
]


@st.composite
def operator_uses(draw):
    """A binary or unary operator, an index or a field read on odd values, sometimes inside a
    transformation (TRANSFORMS)."""
    a, b = draw(st.sampled_from(VALUES)), draw(st.sampled_from(VALUES))
    form = draw(st.integers(0, 7))
    if form == 6:
        c = draw(st.sampled_from(VALUES + INDEXES))
        expr = f"({a})[{draw(st.sampled_from(INDEXES + [b]))}, {c}]"
    elif form == 7:
        expr = f"({a})[{draw(st.sampled_from(['', '1', '-1', b]))}:{draw(st.sampled_from(['', '2', b]))}]"
    elif form == 0:
        expr = f"-({a})"
    elif form == 1:
        expr = f"not ({a})"
    elif form == 2:
        expr = f"({a})[{b}]"
    elif form == 3:
        expr = f"({a}).{draw(st.sampled_from(['a', 'w', '__class__', '__dict__', 'sdef', 'vals', 'cells']))}"
    else:
        expr = f"({a}) {draw(st.sampled_from(OPERATORS))} ({b})"
    if draw(st.booleans()):
        return PRELUDE_S + expr + "\n"
    a_or_b = draw(st.sampled_from([a, b]))
    expr = expr.replace(a_or_b, "x", 1)
    transform = draw(st.sampled_from(TRANSFORMS))
    return PRELUDE_S + transform.format(call=expr, point=a_or_b) + "\n"


# ---------------------------------------------------------------- risky expressions
@st.composite
def risky(draw, leaves, depth=0):
    """A random scalar expression of `leaves` (dg expressions) whose gradient may be infinite or
    NaN at some points: sqrt, ln, division, fractional powers, kinks."""
    if depth >= 3 or draw(st.integers(0, 2)) == 0:
        return draw(st.sampled_from(leaves))
    a = draw(risky(leaves, depth + 1))
    kind = draw(st.integers(0, 2))
    if kind == 0:
        return f"{draw(st.sampled_from(['sqrt', 'ln', 'abs', 'exp', 'sin', 'relu']))}({a})"
    b = draw(risky(leaves, depth + 1))
    if kind == 1:
        return f"({a} {draw(st.sampled_from(['+', '-', '*', '/']))} {b})"
    return f"({a} ** {draw(st.sampled_from(['0.5', '2', '1.5']))})"
