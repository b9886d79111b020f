"""Say in words what the parser expected, instead of grammar terminal names."""

# What a person calls each terminal.
WORDS = {
    "NAME": "a name", "INT": "a number", "FLOAT": "a number", "STRING": "a string",
    "FSTRING": "a string", "LPAR": "'('", "RPAR": "')'", "LSQB": "'['", "RSQB": "']'",
    "LBRACE": "'{'", "RBRACE": "'}'", "COMMA": "','", "COLON": "':'", "SEMI": "';'",
    "DOT": "'.'", "ASSIGN": "'='", "ARROW": "'=>'", "AUG_OP": "an assignment operator",
    "COMP_OP": "a comparison", "PLUS": "'+'", "MINUS": "'-'", "MUL_OP": "an operator",
    "DSTAR": "'**'", "_NL": "a line break", "$END": "the end of the input",
}
KEYWORDS = ("let", "fn", "return", "if", "else", "while", "for", "in", "struct", "import",
            "as", "true", "false", "none", "and", "or", "not", "break", "continue")
for _kw in KEYWORDS:
    WORDS[_kw.upper()] = f"'{_kw}'"

# Terminals that can begin an expression: if the parser would take any of
# these, "an expression" is the clearest thing to say.
EXPR_START = {"NAME", "INT", "FLOAT", "STRING", "FSTRING", "LPAR", "LSQB", "LBRACE",
              "MINUS", "NOT", "TRUE", "FALSE", "NONE", "FN"}

STATEMENT_END = {"_NL", "SEMI", "$END", "RBRACE"}

# Terminals that extend the expression before them; named only when nothing else fits.
CONTINUES_EXPR = {"PLUS", "MINUS", "MUL_OP", "DSTAR", "COMP_OP", "AND", "OR", "LPAR", "LSQB", "DOT"}
# `in` and `not` (`not in`) continue an expression where a comparison could; elsewhere `in` is
# the one of a for loop
COMPARISON_WORDS = {"IN", "NOT"}


def found(tok):
    """Describe the token the parser did not want."""
    if tok.type == "$END":
        return "the end of the input"
    if tok.type == "_NL":
        return "a line break"
    if tok.type.upper() in [k.upper() for k in KEYWORDS] and tok.type != "NAME":
        return f"the reserved word '{tok.value}'"
    return f"'{tok.value}'"


def expected_words(expected):
    """Turn a set of terminal names into a short English list."""
    expected = set(expected)
    if "LET" in expected:
        return "a statement or '}'" if "RBRACE" in expected else "a statement"
    if {"NAME", "INT"} <= expected:
        return "an expression"
    if {"COMMA", "RBRACE", "_NL"} <= expected:         # between a struct's fields
        return "',', '}' or a line break"
    if expected & {"_NL", "SEMI"}:
        return "the end of the statement (a line break or ';')"
    continues = CONTINUES_EXPR | COMPARISON_WORDS if "COMP_OP" in expected else CONTINUES_EXPR
    structural = expected - continues
    if structural - {"$END"}:
        expected = structural
    elif expected - {"$END"} == {"LPAR"}:                # after `fn`: its parameter list
        return "'('"
    elif expected & continues:
        return "an operator"
    words = sorted({WORDS.get(t, t.lower()) for t in expected if t != "$END"})
    if "NAME" in expected and expected - {"NAME", "$END"} <= {"LPAR"}:
        return "a name"
    if not words:
        return "nothing more"
    if len(words) > 4:
        words = words[:4] + ["..."]
    return words[0] if len(words) == 1 else ", ".join(words[:-1]) + " or " + words[-1]


OUTER_ASSIGNMENT = "a function cannot assign to a variable outside it: return the new value, or pass and return a struct"

# Python's spelling of something dg writes its own way: the word, and how dg says it.
PYTHON_WORDS = {
    "def": "dg declares a function with fn: fn f(x) { return x * 2.0 }",
    "elif": "dg writes else if: if a { ... } else if b { ... }",
    "lambda": "dg writes an anonymous function as fn(x) => x + 1",
    "class": "dg's records are structs: struct Point { x, y }, made as Point(1.0, 2.0)",
    "pass": "an empty block is {} in dg",
    "is": "dg compares with == and !=",
    "try": "dg has no exceptions to catch: an error stops the program and says where and why",
    "raise": "error(\"message\") stops the program with that message",
    "assert": "assert is a function in dg: assert(x > 0, \"message\")",
    "from": "dg imports a whole module: import nn (or import nn as n), then nn.mlp(...)",
    "global": OUTER_ASSIGNMENT, "nonlocal": OUTER_ASSIGNMENT,
    "del": "dg has no del: a name lives to the end of its block, and a map without a key is a new map",
    "with": "dg has no with: load(path) and save(path, value) open and close the file themselves",
    "yield": "dg has no generators: a for loop writes rows of a tensor made before it (ys[i] = y), or builds a "
             "tuple (xs = xs + (x,))",
}


LET = "let x = 1 names a value, and x = 2 assigns it again (dg has no var, const or mut)"
IF_CHAIN = "dg has no match or switch: if x == 1 { ... } else if x == 2 { ... } else { ... }"

# the same for words of other languages (JavaScript, Rust, C, Swift, Go)
OTHER_WORDS = {"function": PYTHON_WORDS["def"], "var": LET, "const": LET, "mut": LET, "match": IF_CHAIN, "switch": IF_CHAIN}

CONDITIONAL_EXPRESSION = ("dg has no conditional expression (a if c else b, c ? a : b): where(c, a, b) picks "
                          "entry by entry, or assign in an if statement")


def python_habit_hint(tok, prev, expected):
    """A one-line hint where the input looks like Python (def, elif, lambda, a ':' opening a
    block) or another language (var, function, a type annotation, an arrow function), or None."""
    for t in (prev, tok):
        if t is not None and t.type == "NAME" and t.value in PYTHON_WORDS:
            return PYTHON_WORDS[t.value]
        if t is not None and t.type == "NAME" and t.value in OTHER_WORDS:
            return OTHER_WORDS[t.value]
    if prev is not None and prev.type == "STRING" and prev.value == '""' and tok.type == "STRING":
        return "dg has no triple-quoted strings: a comment (# ...) right above a fn documents it"
    if prev is not None and prev.type == "LPAR" and (tok.type == "DSTAR" or tok.value == "*"):
        return ("dg has no *args or **kwargs: a fn takes a fixed list of parameters; pass a tuple or a "
                "map for many values (f(t) with t = (a, b), and t[0] inside)")
    if prev is not None and prev.type == "COMMA" and tok.type == "DSTAR":
        return "dg has no **kwargs: pass a map for named values, m[\"key\"] inside"
    if prev is not None and prev.type == "COMMA" and tok.type == "MUL_OP" and tok.value == "*":
        return "dg has no starred names: t[1:] is the rest of a tuple, and a fn takes a tuple for many values"
    if tok.type == "COLON" and "LBRACE" in expected:
        return "dg's blocks are in braces, not after ':': if x > 0 { ... }"
    if tok.type == "COLON" and prev is not None and prev.type == "NAME" and ("ASSIGN" in expected or "RPAR" in expected):
        return "dg has no type annotations: let x = 1.0, fn f(x, n) { ... } (a value knows its type: type(x))"
    if tok.type == "MINUS" and prev is not None and prev.type == "RPAR" and "LBRACE" in expected:
        return "dg has no return types: fn f(x) { return x * 2.0 }"
    if tok.type == "ARROW" and prev is not None and prev.type == "RPAR":
        if "LBRACE" in expected:        # fn f(x) => ...: a named function's body is a block
            return "a named function's body is a block: fn f(x) { return x * 2.0 } (fn(x) => x * 2.0 is one without a name)"
        return "an anonymous function starts with fn: fn(x) => x + 1.0"
    if tok.type == "FLOAT" and tok.value.startswith(".") and prev is not None and prev.value.endswith("."):
        return "a range of ints is range(a, b): for i in range(0, 10) { ... }"
    if tok.type == "ASSIGN" and "LBRACE" in expected:
        return "== compares (a condition cannot assign): if x == 1 { ... }"
    if tok.type == "ASSIGN" and "_NL" in expected and prev is not None and prev.type == "NAME":
        return "one assignment per statement: b = 5, then a = b"
    if tok.type == "LBRACE" and prev is not None and prev.type == "NAME" and "LBRACE" not in expected:
        # Rust's, Swift's and Go's struct literal: Point { x: 1.0 }
        return (f"a struct is made by calling its name, with the fields by name or in order: "
                f"{prev.value}(x=1.0, y=2.0) or {prev.value}(1.0, 2.0)")
    at_start = prev is None or prev.type in ("_NL", "SEMI", "LBRACE")
    if tok.type == "MUL_OP" and tok.value == "//" and at_start:
        return "a comment starts with # (// divides and rounds down)"
    if tok.type == "MUL_OP" and tok.value == "/" and at_start:
        return "a comment starts with # and runs to the end of its line"
    if prev is not None and prev.type not in ("_NL", "ELSE", "LBRACE", "RBRACE", "SEMI"):
        if tok.type == "IF":
            return CONDITIONAL_EXPRESSION
        if tok.type == "FOR":
            return ("dg has no comprehensions: tensors compute on every entry at once (x * 2.0), "
                    "vmap(f)(xs) maps a function over rows, and a for loop builds a tuple")
    if "LBRACE" in expected and prev is not None and prev.type == "RPAR" and tok.type not in ("_NL", "$END"):
        return "a block is in braces, even one of a single statement: if x > 0 { print(x) }"
    return None


def describe_unexpected_token(tok, prev, expected):
    """Build the message for an UnexpectedToken: what was expected, after what, found what."""
    what = expected_words(expected)
    after = f" after '{prev.value}'" if prev is not None and prev.type != "_NL" else ""
    if prev is not None and prev.type == "_NL" and not what.startswith("a statement"):
        after = " at the start of a statement"
    message = f"expected {what}{after}, found {found(tok)}"
    if tok.type in {k.upper() for k in KEYWORDS} and "NAME" in expected and "LET" not in expected:
        message += f" ('{tok.value}' is a reserved word and cannot be used as a name)"
    return message
