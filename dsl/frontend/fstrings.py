"""String literal escapes and the splitting of f-strings into text and `{expr:spec}` parts."""

ESCAPES = {"n": "\n", "t": "\t", '"': '"', "\\": "\\", "r": "\r", "0": "\0"}


def unescape(body):
    """Decode the escapes of a string literal's body; ValueError(offset) on a bad one."""
    if "\\" not in body:
        return body
    out, i = [], 0
    while i < len(body):
        c = body[i]
        if c == "\\":
            nxt = body[i + 1] if i + 1 < len(body) else ""
            if nxt not in ESCAPES:
                raise ValueError(i)
            out.append(ESCAPES[nxt])
            i += 2
        else:
            out.append(c)
            i += 1
    return "".join(out)


def split_fstring(body, fail):
    """Yield ("text", s, offset) and ("expr", (expr_text, spec, spec_offset), offset) pieces of an
    f-string body (spec None: the value as it prints inside a container, for f"{x=}"; a spec may
    hold fields of its own, f"{x:>{width}}", split by the caller).

    `{{` and `}}` are literal braces. The format spec starts at the first `:`
    that is not nested inside brackets or a string within the expression.
    `fail(message, offset)` reports an error at a body offset.
    """
    text, text_start, i, n = [], 0, 0, len(body)
    while i < n:
        c = body[i]
        if c == "{" and body.startswith("{{", i):
            text.append("{")
            i += 2
        elif c == "}" and body.startswith("}}", i):
            text.append("}")
            i += 2
        elif c == "}":
            fail("a single '}' is not allowed in an f-string (write '}}')", i)
        elif c == "{":
            if text:
                yield "text", "".join(text), text_start
                text = []
            end, colon = _match_brace(body, i + 1, fail)
            expr_end = colon if colon is not None else end
            expr_text = body[i + 1:expr_end]
            if not _bare_quote(expr_text):       # the old style: strings written \"...\"
                expr_text = expr_text.replace('\\"', '"')
            if not expr_text.strip():
                fail("an f-string has an empty '{}' (expected an expression inside)", i)
            spec = body[colon + 1:end] if colon is not None else ""
            conversion = _conversion(expr_text)
            if conversion:
                # Python's !s (the value as print shows it) and !r (as it shows inside a
                # container: a string quoted); !r then takes no spec, having no repr to format
                expr_text = expr_text.rstrip()[:-2]
                if conversion == "!a" or (conversion == "!r" and colon is not None):
                    fail(f"dg's f-strings take !s (a format spec may follow) and !r (none may), not "
                         f"{conversion}{':' + spec if colon is not None else ''}", i)
                spec = None if conversion == "!r" else spec
            elif _self_documenting(expr_text):
                # Python's f"{x=}": the expression as written, then its value (quoted where it is
                # a string, unless a format spec says how to show it)
                yield "text", body[i + 1:expr_end], i + 1
                expr_text = expr_text.rstrip()[:-1]
                spec = spec if colon is not None else None
            yield "expr", (expr_text, spec, colon + 1 if colon is not None else end), i + 1
            i = end + 1
            text_start = i
        else:
            if not text:
                text_start = i
            text.append(c)
            if c == "\\" and i + 1 < n:
                text.append(body[i + 1])
                i += 1
            i += 1
    if text:
        yield "text", "".join(text), text_start


def _self_documenting(text):
    """Whether a field's expression ends in a lone `=` (f"{x=}"), not in ==, !=, <= or >=."""
    t = text.rstrip()
    return t.endswith("=") and (len(t) < 2 or t[-2] not in "=!<>")


def _match_brace(body, i, fail):
    """Find the `}` closing an f-string field that starts at `i`, and its top-level `:`."""
    depth, colon, start = 0, None, i - 1
    while i < len(body):
        c = body[i]
        if c == '"':
            # a string inside the field (f"{m["k"]}"): skip it, escapes included
            i += 1
            while i < len(body) and body[i] != '"':
                i += 2 if body[i] == "\\" else 1
            i += 1
            continue
        if body.startswith('\\"', i):
            # a string inside the field; the f-string's own quotes force it to be escaped
            j = body.find('\\"', i + 2)
            i = len(body) if j < 0 else j + 2
            continue
        if c in "([{":
            depth += 1
        elif c in ")]":
            depth -= 1
        elif c == "}":
            if depth == 0:
                return i, colon
            depth -= 1
        elif c == ":" and depth == 0 and colon is None:
            colon = i
        i += 1
    fail("this '{' in an f-string is never closed", start)


def _bare_quote(text):
    """Whether `text` holds a `"` that is not escaped."""
    i = 0
    while i < len(text):
        if text[i] == "\\":
            i += 2
            continue
        if text[i] == '"':
            return True
        i += 1
    return False


def _conversion(text):
    """Python's conversion at the end of a field's expression (f"{x!r}"): "!s", "!r", "!a" or None."""
    t = text.rstrip()
    return t[-2:] if len(t) > 2 and t[-2] == "!" and t[-1] in "sra" else None
