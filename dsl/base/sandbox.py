"""Which files a dg program may touch: the one place that decides, for `import`
(beyond the standard library), `load_csv`, `load` and `save`.

The host chooses with `Interpreter(files=...)` or `dg --files ...`:
"all" (the default: what the process may open), "none" (no file at all), or
a list of directories (files inside them, found through their real paths,
so `..`, absolute paths and symlinks cannot lead outside). The policy of the
interpreter that is running is held in a context variable, set by
`Interpreter.call_in_run`, so nested and concurrent interpreters each keep
their own. See docs/security.md.
"""

import contextvars
import os
from pathlib import Path

from ..errors import error

HINT = "the host program grants file access with Interpreter(files=...) or dg --files"


class FileAccess:
    """A file policy: every path, no path, or the paths inside some directories."""

    __slots__ = ("roots",)

    def __init__(self, files="all"):
        if isinstance(files, FileAccess):
            self.roots = files.roots
        elif isinstance(files, str) and files in ("all", "none"):
            self.roots = None if files == "all" else ()
        elif isinstance(files, (str, bytes, os.PathLike)) or not _iterable(files):
            raise TypeError("files= takes \"all\", \"none\" or a list of directories, "
                            f"got {files!r}")
        else:
            self.roots = tuple(Path(os.path.realpath(os.fspath(d))) for d in files)

    @property
    def everything(self):
        """Whether every path is allowed (no checks, no path rewriting)."""
        return self.roots is None

    def allows(self, path):
        """Whether `path` (after resolving symlinks and `..`) lies inside an allowed directory."""
        if self.roots is None:
            return True
        try:
            real = Path(os.path.realpath(path))
        except (OSError, ValueError):       # a name the system cannot even resolve
            return False
        return any(real == root or root in real.parents for root in self.roots)

    def check(self, path, action):
        """The path to open for `action` ("read", "write"); a `limit` error if it is not allowed."""
        if self.roots is None:
            return path
        if not self.roots:
            raise error("limit", f"cannot {action} {path}: file access is off for this program", hint=HINT)
        if not self.allows(path):
            allowed = ", ".join(str(r) for r in self.roots)
            raise error("limit", f"cannot {action} {path}: it is outside the directories this program "
                                 f"may use ({allowed})", hint=HINT)
        return Path(os.path.realpath(path))

    def __repr__(self):
        if self.roots is None:
            return "FileAccess('all')"
        return "FileAccess('none')" if not self.roots else f"FileAccess({[str(r) for r in self.roots]})"


def _iterable(x):
    """Whether `x` can be iterated (a list or tuple of directories)."""
    try:
        iter(x)
    except TypeError:
        return False
    return True


ALL = FileAccess("all")
_current = contextvars.ContextVar("dg_file_access", default=ALL)


def current():
    """The policy of the dg program running in this thread (everything outside any run)."""
    return _current.get()


def enter(policy):
    """Make `policy` current; returns the token `leave` needs."""
    return _current.set(policy)


def leave(token):
    """Restore the policy that was current before `enter`."""
    _current.reset(token)


def for_reading(candidates, who):
    """The first allowed candidate path that exists (else the first allowed one), for reading."""
    policy = current()
    if policy.everything:
        return next((c for c in candidates if probe(c, "exists")), candidates[0])
    allowed = [c for c in candidates if policy.allows(c)]
    if not allowed:
        policy.check(candidates[0], "read")     # raises the right message
    chosen = next((c for c in allowed if probe(c, "exists")), allowed[0])
    return policy.check(chosen, "read")


def probe(path, test):
    """path.exists() / .is_file() / .is_dir(), false for a name the system refuses (too long, ...)."""
    try:
        return getattr(path, test)()
    except (OSError, ValueError):
        return False


def for_writing(path):
    """The path to write, checked against the current policy."""
    return current().check(path, "write")
