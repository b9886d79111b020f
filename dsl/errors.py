"""Errors a dg program can cause, their source locations, and how they print.

Every error is a `DgError` with a kind (reference section 7), a message, a span and
the dg call stack. Formatting lives here and nowhere else.
"""

KINDS = ("syntax", "name", "type", "shape", "key", "index", "value", "grad",
         "numerics", "limit", "import", "user", "internal")


class Source:
    """The text of one program or module, with the name it is shown under."""

    __slots__ = ("name", "text", "_lines")

    def __init__(self, name, text):
        self.name = name
        self.text = text
        self._lines = None

    def line(self, n):
        """Return line `n` (1-based) without its line break, or ''."""
        if self._lines is None:
            self._lines = self.text.split("\n")
        if 1 <= n <= len(self._lines):
            return self._lines[n - 1].rstrip("\r")
        return ""

    def __repr__(self):
        return f"Source({self.name!r})"


class Span:
    """A region of a source: 1-based line and column, end column exclusive."""

    __slots__ = ("source", "line", "column", "end_line", "end_column")

    def __init__(self, source, line, column, end_line=None, end_column=None):
        self.source = source
        self.line = line
        self.column = column
        self.end_line = line if end_line is None else end_line
        self.end_column = column + 1 if end_column is None else end_column

    @property
    def filename(self):
        """The name of the source file this span points into."""
        return self.source.name if self.source is not None else "<unknown>"

    def where(self):
        """Return `file:line:column`."""
        return f"{self.filename}:{self.line}:{self.column}"

    def to(self, other):
        """Return the span from the start of this one to the end of `other`."""
        return Span(self.source, self.line, self.column, other.end_line, other.end_column)

    def __repr__(self):
        return f"Span({self.where()})"


def source_text(span):
    """The source text a one-line span covers ('' when it is not on one line)."""
    if span is None or span.source is None or span.end_line != span.line:
        return ""
    return span.source.line(span.line)[span.column - 1:span.end_column - 1]


class OutputFailed(Exception):
    """The program's output could not be written (a closed pipe or stream, a full disk): a problem
    of where the output goes, not of the program, so not a DgError. `dg` reports it in one line."""

    def __init__(self, cause):
        reason = getattr(cause, "strerror", None) or str(cause)
        super().__init__(f"cannot write to the output: {reason}")
        self.cause = cause


def write_output(stream, text):
    """Write a program's output to `stream` (None: the stream is closed); OutputFailed if it fails."""
    if stream is None:
        raise OutputFailed(OSError(9, "it is closed"))
    try:
        try:
            stream.write(text)
        except UnicodeEncodeError:      # a string from bytes that are not UTF-8 (argv): shown with '?'
            encoding = getattr(stream, "encoding", None) or "utf-8"
            stream.write(text.encode(encoding, "replace").decode(encoding))
    except BrokenPipeError:
        raise
    except (OSError, ValueError) as exc:      # ValueError: a closed file object
        raise OutputFailed(exc) from None


class DgError(Exception):
    """An error of a dg program: a kind, a message, a location and a call stack."""

    kind = "internal"

    def __init__(self, message, span=None, kind=None, hint=None):
        super().__init__(message)
        if kind is not None:
            self.kind = kind
        self.message = message
        self.span = span
        self.hint = hint
        self.frames = []        # (function name, call-site span), innermost first
        self.pending = None     # a function the error left, whose call site is not known yet
        # raised by a replay of a staged program, which knows the failing step's line but not the
        # calls that led to it (the functions the recording inlined)
        self.replayed = False

    # -- the call stack, filled in as the error unwinds -------------------
    def add_call(self, span):
        """Record that the error passed out through a call expression at `span`."""
        if self.span is None:
            self.span = span
        elif self.pending is not None:
            self.frames.append((self.pending, span))
            self.pending = None

    def exit_function(self, name):
        """Record that the error left the dg function `name`."""
        if self.pending is not None:
            self.frames.append((self.pending, None))
        self.pending = name

    def settle(self):
        """Close the call stack when the error leaves dg entirely."""
        if self.pending is not None:
            self.frames.append((self.pending, None))
            self.pending = None
        return self

    # -- what embedding code reads ------------------------------------------
    @property
    def filename(self):
        """The file of the error's location, or None."""
        return self.span.filename if self.span is not None else None

    @property
    def line(self):
        """The 1-based line of the error's location, or None."""
        return self.span.line if self.span is not None else None

    @property
    def column(self):
        """The 1-based column of the error's location, or None."""
        return self.span.column if self.span is not None else None

    def __str__(self):
        return format_error(self)

    def _render_traceback_(self):
        """How IPython/Jupyter show the error: the reference format, without a Python traceback."""
        return format_error(self.settle()).split("\n")


def _subclass(kind):
    """Make the DgError subclass for one kind, e.g. ShapeError."""
    name = "".join(p.capitalize() for p in kind.split("_")) + "Error"
    return type(name, (DgError,), {"kind": kind, "__doc__": f"A dg error of kind '{kind}'."})


SyntaxError_ = _subclass("syntax")
NameError_ = _subclass("name")
TypeError_ = _subclass("type")
ShapeError = _subclass("shape")
KeyError_ = _subclass("key")
IndexError_ = _subclass("index")
ValueError_ = _subclass("value")
GradError = _subclass("grad")
NumericsError = _subclass("numerics")
LimitError = _subclass("limit")
ImportError_ = _subclass("import")
UserError = _subclass("user")
InternalError = _subclass("internal")

BY_KIND = {c.kind: c for c in (SyntaxError_, NameError_, TypeError_, ShapeError, KeyError_,
                               IndexError_, ValueError_, GradError, NumericsError, LimitError,
                               ImportError_, UserError, InternalError)}


def located(exc, span):
    """Give an error that has no location yet this span; return it, to be raised again."""
    if exc.span is None:
        exc.span = span
    return exc


def error(kind, message, span=None, hint=None):
    """Build the DgError subclass for `kind`."""
    return BY_KIND[kind](message, span=span, hint=hint)


def format_error(err):
    """Render an error as reference section 7 shows: header, location, source, caret, stack."""
    out = [f"error[{err.kind}]: {err.message}"]
    span = err.span
    if span is not None and span.source is not None:
        text = span.source.line(span.line).replace("\t", " ")
        num = str(span.line)
        pad = " " * len(num)
        if span.end_line == span.line:
            width = max(1, span.end_column - span.column)
        else:
            width = max(1, len(text) - span.column + 1)
        text, column, width = _window(text, span.column, width)
        out.append(f"{pad}--> {span.where()}")
        out.append(f"{pad} |")
        out.append(f"{num} | {text}")
        out.append(f"{pad} | {' ' * (column - 1)}{'^' * width}")
        gutter = pad + " "
    elif span is not None:
        out.append(f"  --> {span.where()}")
        gutter = "   "
    else:
        gutter = "   "
    out += [gutter + line for line in _stack_lines(err.frames + ([(err.pending, None)] if err.pending else []))]
    if err.hint:
        out.append(f"{gutter}= help: {err.hint}")
    return "\n".join(out)


SHOWN_LINE = 120        # characters of a source line an error shows around its column


def _window(text, column, width):
    """A long source line cut to the part around the error (a 12 MB string literal is one line):
    the text, the caret's column in it, and the caret's width."""
    if len(text) <= SHOWN_LINE:
        return text, column, width
    start = max(0, min(column - 1 - SHOWN_LINE // 3, len(text) - SHOWN_LINE))
    shown = text[start:start + SHOWN_LINE]
    lead = "..." if start > 0 else ""
    tail = "..." if start + SHOWN_LINE < len(text) else ""
    column = column - start + len(lead)
    width = max(1, min(width, len(shown) + len(lead) - column + 1))
    return lead + shown + tail, column, width


MAX_STACK_GROUPS = 20


def _stack_lines(frames):
    """The `= in f, called at ...` lines, with repeats folded and a long stack shortened."""
    groups = []
    for name, call in frames:
        verb = "imported" if name.startswith("module ") else "called"     # see Interpreter.import_module
        line = f"= in {name}" + (f", {verb} at {call.where()}" if call is not None else "")
        if groups and groups[-1][0] == line:
            groups[-1][1] += 1
        else:
            groups.append([line, 1])
    lines = [line if n == 1 else f"{line} (and {n - 1} more time{'s' * (n > 2)} in a row)"
             for line, n in groups]
    if len(lines) > MAX_STACK_GROUPS:
        half = MAX_STACK_GROUPS // 2
        lines = lines[:half] + [f"= ... {len(lines) - 2 * half} more calls ..."] + lines[-half:]
    return lines
