"""A lean lexer and LALR loop over lark's own terminals and parse table.

lark's `feed_token` spends most of parsing time on bookkeeping that does not
depend on the input: a Python-level `Rule.__ne__` in an assert, a
`Rule.__hash__` per reduction, and a call per `?rule` that only hands its one
child up (about nine for every atom, one per precedence level). This loop uses
the same table and the same callbacks, so the same AST comes out, with each
action digested into a tuple and those pass-through reductions reduced to a
goto. It only handles correct input: at the first token the table has no
action for, it raises `Reject`, and the caller re-runs lark's own parser,
whose exception carries everything the syntax-error messages need.

The lexer is lark's basic lexer in one loop: the same terminals in the same
order in one regular expression (an alternation takes the first alternative
that matches, as lark's scanner does), keywords retyped from NAME the way
lark's "unless" callbacks do, and the same Token objects with positions.
"""

import copy
import re

from lark import Token
from lark.parse_tree_builder import ChildFilter
from lark.lexer import UnlessCallback
from lark.parsers.lalr_analysis import Shift

SHIFT, PASS, REDUCE = 0, 1, 2


class Reject(Exception):
    """The input is not in the language; lark's parser will say why."""


class Driver:
    """The parse table of one lark LALR parser, digested for a fast loop."""

    def __init__(self, lark):
        """Digest `lark`'s table into (SHIFT, state, callback), (PASS, rule name) or (REDUCE, size, callback, rule name)."""
        self.tokens = _lexer(lark.parser.lexer.lexer)     # inside the post-lexer connector
        inner = lark.parser.parser.parser
        table, callbacks = inner.parse_table, inner.callbacks
        self.start_states = table.start_states
        self.end_states = table.end_states
        self.states = {}
        self.passes = {}    # memo of _pass_run
        for state, actions in table.states.items():
            row = self.states[state] = {}
            for symbol, (action, arg) in actions.items():
                if action is Shift:
                    row[symbol] = (SHIFT, arg, callbacks.get(symbol))
                elif _passes_through(arg):
                    row[symbol] = (PASS, arg.origin.name)
                else:
                    row[symbol] = (REDUCE, len(arg.expansion), _callback(arg, callbacks[arg]), arg.origin.name)

    def parse(self, tokens, start):
        """Parse the token stream (ending in `$END`) from rule `start`; return the transformer's result."""
        states, passes = self.states, self.passes
        end_state = self.end_states[start]
        state_stack = [self.start_states[start]]
        value_stack = []
        for token in tokens:
            kind = token.type
            while True:
                action = states[state_stack[-1]].get(kind)
                if action is None:
                    raise Reject()
                step = action[0]
                if step is SHIFT:
                    state_stack.append(action[1])
                    value_stack.append(action[2](token) if action[2] else token)
                    break
                if step is PASS:     # the child stays on the value stack; only the top state moves
                    if kind == "$END":
                        state_stack[-1] = states[state_stack[-2]][action[1]][1]
                    else:           # a run of them depends only on (state below, top state, token type)
                        key = (state_stack[-2], state_stack[-1], kind)
                        top = passes.get(key)
                        if top is None:
                            top = passes[key] = self._pass_run(*key)
                        state_stack[-1] = top
                else:
                    _, size, callback, origin = action
                    if size:
                        children = value_stack[-size:]
                        del state_stack[-size:]
                        del value_stack[-size:]
                    else:
                        children = []
                    value_stack.append(callback(children))
                    state_stack.append(states[state_stack[-1]][origin][1])
                if kind == "$END" and state_stack[-1] == end_state:
                    return value_stack[-1]
        raise Reject()      # the stream ended without `$END`


    def _pass_run(self, below, top, kind):
        """The top state after every pass-through reduction that `kind` triggers from `top`."""
        states = self.states
        action = states[top].get(kind)
        while action is not None and action[0] is PASS:
            top = states[below][action[1]][1]
            action = states[top].get(kind)
        return top


class _Inlined:
    """What a `_rule` (or lark's `__x_star_N` helper) builds: children its parent splices into its own."""

    __slots__ = ("children",)

    def __init__(self, children):
        self.children = children


def _callback(rule, callback):
    """The callback for `rule`; for a rule whose children are spliced into its parent, one that
    skips building a lark Tree (the transformer has no method for it; the parent reads `.children`)."""
    if not rule.origin.name.startswith("_") or rule.alias is not None:
        return callback
    if isinstance(callback, ChildFilter):
        spliced = copy.copy(callback)
        spliced.node_builder = _Inlined
        return spliced
    return _Inlined


def _lexer(basic):
    """A generator function equivalent to lark's BasicLexer `basic`, for input it can lex."""
    scanner = basic.scanner            # building it also builds basic.callback
    ignore, newline_types = basic.ignore_types, basic.newline_types
    # Blanks before a token are skipped by the same match (one match per token, not two);
    # lark's own blank terminal stays in the alternation for blanks at the very end.
    blanks = [t.pattern.to_regexp() for t in scanner.terminals if t.name in ignore]
    skip = next((b[:-1] + "*" for b in blanks if re.fullmatch(r"\[[^\]\n]*\]\+", b)), "")
    master = re.compile(skip + "(?:" + "|".join(f"(?P<{t.name}>{t.pattern.to_regexp()})"
                                              for t in scanner.terminals) + ")", basic.g_regex_flags)
    retype = {}
    for name, callback in basic.callback.items():
        if type(callback) is not UnlessCallback:
            raise TypeError(f"no fast lexer for the callback on {name}")
        retype[name] = {t.pattern.value: t.name for t in callback.scanner.terminals}

    def tokens(text):
        """Yield the tokens of `text`, then `$END`; raise Reject at a character no terminal matches."""
        match, new_str = master.match, str.__new__
        pos, line, line_start, end_of_text = 0, 1, 0, len(text)
        last = None
        while pos < end_of_text:
            m = match(text, pos)
            if m is None:
                raise Reject()
            kind = m.lastgroup
            pos, end = m.span(kind)
            value = text[pos:end]
            start_line, column = line, pos - line_start + 1
            if kind in newline_types and "\n" in value:
                line += value.count("\n")
                line_start = pos + value.rindex("\n") + 1
            if kind not in ignore:
                if kind in retype:
                    kind = retype[kind].get(value, kind)
                # Token(...) costs two Python-level calls; filling the slots directly does not.
                tok = new_str(Token, value)
                tok.type, tok.value, tok.start_pos, tok.end_pos = kind, value, pos, end
                tok.line, tok.column, tok.end_line, tok.end_column = start_line, column, line, end - line_start + 1
                yield tok
                last = tok
            pos = end
        yield Token.new_borrow_pos("$END", "", last) if last is not None else Token("$END", "", 0, 1, 1)
    return tokens


def _passes_through(rule):
    """Whether reducing `rule` just hands its single child up (a `?rule` alternative with no alias)."""
    return len(rule.expansion) == 1 and rule.alias is None and rule.options.expand1
