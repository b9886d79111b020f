"""Reading dg source files: `dg run`, `dg check`, imports, `Interpreter.run_file` and the REPL's
`:load` all read through `read_source`, so that a path that is no file (a NUL in it, /dev/zero,
an endless pipe) gives the same clear answer everywhere instead of a Python exception or a hang."""

MAX_SOURCE_BYTES = 64 << 20     # far past any program; /dev/zero or an endless pipe stops here


def read_source(path):
    """The text of a source file (UTF-8, a BOM dropped). Raises OSError (with a strerror a
    message can show) or UnicodeDecodeError."""
    try:
        with open(path, "rb") as fh:
            blob = b""
            while len(blob) <= MAX_SOURCE_BYTES:      # in pieces: read(n) sets n bytes aside first
                piece = fh.read(1 << 22)
                if not piece:
                    break
                blob += piece
    except ValueError:          # a NUL character in the path: no file can have that name
        raise OSError(22, "a path cannot hold a NUL character") from None
    if len(blob) > MAX_SOURCE_BYTES:
        raise OSError(27, f"it is longer than {MAX_SOURCE_BYTES >> 20} MiB (or never ends)")
    return blob.decode("utf-8-sig")
