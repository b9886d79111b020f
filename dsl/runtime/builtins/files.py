"""Checkpoints: save(path, tree) and load(path), and how relative paths resolve.

The file format (version 1), all integers little-endian:

    b"DGCKPT\\r\\n"   8 bytes of magic (the \\r\\n catches text-mode mangling)
    version          u32, 1
    header_len       u64, length of the JSON header
    data_len         u64, length of the tensor data
    crc32            u32, zlib.crc32 of header + data
    header           UTF-8 JSON describing the tree
    data             raw tensor buffers, little-endian: float64, float32, float16, int64,
                     int32 or bool (one byte each), as the tensor's dtype names

The JSON is a tree of nodes {"t": kind, ...}: ints as hexadecimal strings
(any size), floats as Python's repr (exact, with nan and inf), strings, bools,
none, tuples, maps (a list of [key node, value node] pairs, so key types and
insertion order survive) and structs (name, field names, values). A tensor
node names its dtype, shape and byte range in the data. Loading only ever
builds these kinds, so a file cannot run code (no pickle). Saving writes a
temporary file beside the target and renames it over the target only once
the data is on disk, so an interrupted save leaves the old file whole.
"""

import json
import json.scanner
import math
import os
import struct as _struct
import tempfile
import zlib
from pathlib import Path

import numpy as np

from ...base import sandbox
from ...core import tape
from ...core.ops.arith import too_long
from ...core.ops.core import check_size
from ...core.printing import show
from ...core.stage import perform
from ...core.tape import raw
from ...core.values import Struct, StructDef, a_type_name, type_name
from ...errors import error

MAGIC = b"DGCKPT\r\n"
VERSION = 1
_PREFIX = _struct.Struct("<8sIQQI")
_DTYPES = {"float64": np.dtype("<f8"), "float32": np.dtype("<f4"), "float16": np.dtype("<f2"),
           "int64": np.dtype("<i8"), "int32": np.dtype("<i4"), "bool": np.dtype("bool")}
MAX_NESTING = 1000           # containers inside containers; deeper trees are refused both ways
MAX_FILE_BYTES = 1 << 30     # load and load_csv read at most 1 GiB: /dev/zero or an endless pipe stops there


# ---------------------------------------------------------------- paths
def _path_arg(path, who):
    """A path argument as a string."""
    p = raw(path)
    if type(p) is not str:
        raise error("type", f"{who} needs a file path as a non-empty string, got {type_name(p)}")
    if not p:       # a string, so the type is right; only its value is bad
        raise error("value", f"{who} needs a file path as a non-empty string, got \"\"")
    if "\0" in p:
        raise error("value", f"{who}: a file path cannot contain the character \\0")
    return p


def read_limited(source, who):
    """The bytes of a file, at most MAX_FILE_BYTES (a `limit` error beyond: the file may never end)."""
    try:
        with open(source, "rb") as fh:
            blob = read_at_most(fh, MAX_FILE_BYTES + 1)
    except OSError as exc:
        raise error("value", f"cannot read {source}: {exc.strerror or exc}") from None
    if len(blob) > MAX_FILE_BYTES:
        raise error("limit", f"{who}: {source} is longer than {MAX_FILE_BYTES:,} bytes (or never ends)")
    return blob


def read_at_most(fh, limit):
    """Up to `limit` bytes of a binary file: read(limit) would set aside `limit` bytes (a GiB)
    before reading a file of a few. A file's size says how much to ask for first; a pipe or a
    device is read in pieces."""
    try:
        first = os.fstat(fh.fileno()).st_size + 1
    except OSError:
        first = 0
    pieces, total = [], 0
    while total < limit:
        piece = fh.read(min(first if not pieces and first > 1 else 1 << 20, limit - total))
        if not piece:
            break
        pieces.append(piece)
        total += len(piece)
    return pieces[0] if len(pieces) == 1 else b"".join(pieces)


def read_path(path, who):
    """Where to read a relative path: the working directory, else beside the calling script."""
    p = Path(_path_arg(path, who)).expanduser()
    candidates = [p]
    span = tape.get_span()
    name = span.source.name if span is not None and span.source is not None else "<"
    if not p.is_absolute() and not name.startswith("<"):
        candidates.append(Path(name).resolve().parent / p)
    return sandbox.for_reading(candidates, who)     # the file policy (dsl/base/sandbox.py) decides


# ---------------------------------------------------------------- encoding
def _encode(v, buffers, offset, path, depth=0):
    """The JSON node for one value; tensor bytes go to `buffers`. Returns (node, new offset)."""
    v = raw(v)
    if depth > MAX_NESTING:
        raise error("value", f"save cannot store a tree nested more than {MAX_NESTING} levels deep")
    t = type(v)
    if t is bool or t is np.bool_:
        return {"t": "bool", "v": bool(v)}, offset
    if t is int:
        return {"t": "int", "v": hex(v)}, offset
    if t is float or t is np.float64:
        return {"t": "float", "v": repr(float(v))}, offset
    if t is str:
        return {"t": "str", "v": v}, offset
    if v is None:
        return {"t": "none"}, offset
    if t is np.ndarray:
        kind = v.dtype.name if v.dtype.name in _DTYPES else "float64"
        data = np.ascontiguousarray(v, dtype=_DTYPES[kind]).tobytes()
        buffers.append(data)
        node = {"t": "tensor", "dtype": kind, "shape": list(v.shape), "offset": offset, "nbytes": len(data)}
        return node, offset + len(data)
    if t is tuple:
        items = []
        for i, x in enumerate(v):
            node, offset = _encode(x, buffers, offset, f"{path}[{i}]", depth + 1)
            items.append(node)
        return {"t": "tuple", "items": items}, offset
    if t is dict:
        pairs = []
        for k, x in v.items():
            key, _ = _encode(k, buffers, offset, path)
            node, offset = _encode(x, buffers, offset, f"{path}[{show(k, True)}]", depth + 1)   # dg's ["k"]
            pairs.append([key, node])
        return {"t": "map", "items": pairs}, offset
    if t is Struct:
        items = []
        for name, x in zip(v.sdef.fields, v.vals):
            node, offset = _encode(x, buffers, offset, f"{path}.{name}", depth + 1)
            items.append(node)
        return {"t": "struct", "name": v.sdef.name, "fields": list(v.sdef.fields), "items": items}, offset
    raise error("type", f"save cannot store {a_type_name(v)} (at {path or 'the top'}); a checkpoint holds "
                        "tensors, numbers, strings, bools, none, tuples, maps and structs")


def encode(tree):
    """The complete bytes of a checkpoint holding `tree`."""
    buffers = []
    node, _ = _encode(tree, buffers, 0, "")
    text = json.dumps({"format": "dg-checkpoint", "tree": node}, ensure_ascii=False,
                      separators=(",", ":"), allow_nan=False)
    try:
        header = text.encode("utf-8")
    except UnicodeEncodeError:      # a string from bytes that are not UTF-8 (argv): JSON escapes keep it
        header = json.dumps({"format": "dg-checkpoint", "tree": node}, ensure_ascii=True,
                            separators=(",", ":"), allow_nan=False).encode("ascii")
    data = b"".join(buffers)
    crc = zlib.crc32(data, zlib.crc32(header))
    return _PREFIX.pack(MAGIC, VERSION, len(header), len(data), crc) + header + data


# ---------------------------------------------------------------- decoding
class Damaged(Exception):
    """The file is not a well-formed checkpoint."""


def _need(cond, what):
    """Raise Damaged unless cond holds."""
    if not cond:
        raise Damaged(what)


def _decode(node, data, structs, depth=0):
    """The dg value of one JSON node."""
    _need(type(node) is dict, "a node is not an object")
    _need(depth <= MAX_NESTING, "its tree is nested too deeply")
    t = node.get("t")
    if t == "bool":
        _need(type(node.get("v")) is bool, "a bad bool")
        return node["v"]
    if t == "int":
        text = node.get("v")
        # dg's ints have at most 4,300 digits (core/ops/arith.py): hex() writes 3,575 characters at most
        _need(type(text) is str and len(text) <= 3_575, "an int longer than dg's ints")
        try:
            value = int(text, 16)
        except ValueError:
            raise Damaged("a bad int") from None
        _need(not too_long(value), "an int longer than dg's ints")
        return value
    if t == "float":
        text = node.get("v")
        _need(type(text) is str and len(text) < 40, "a bad float")
        try:
            return float(text)
        except ValueError:
            raise Damaged("a bad float") from None
    if t == "str":
        _need(type(node.get("v")) is str, "a bad string")
        return node["v"]
    if t == "none":
        return None
    if t == "tensor":
        return _decode_tensor(node, data)
    if t == "tuple":
        items = node.get("items")
        _need(type(items) is list, "a bad tuple")
        return tuple([_decode(x, data, structs, depth + 1) for x in items])
    if t == "map":
        items = node.get("items")
        _need(type(items) is list, "a bad map")
        out = {}
        for pair in items:
            _need(type(pair) is list and len(pair) == 2, "a bad map entry")
            key = _decode(pair[0], data, structs, depth + 1)
            _need(type(key) in (str, int, bool), "a map key that is not a string, int or bool")
            out[key] = _decode(pair[1], data, structs, depth + 1)
        return out
    if t == "struct":
        name, fields, items = node.get("name"), node.get("fields"), node.get("items")
        _need(type(name) is str and name.isidentifier() and type(fields) is list and type(items) is list
              and len(fields) == len(items) and all(type(f) is str and f.isidentifier() for f in fields)
              and len(set(fields)) == len(fields), "a bad struct")
        key = (name, tuple(fields))
        if key not in structs:
            structs[key] = StructDef(name, fields)
        return Struct(structs[key], [_decode(x, data, structs, depth + 1) for x in items])
    raise Damaged(f"an unknown kind of value {t!r}")


def _decode_tensor(node, data):
    """A tensor node's array, copied out of the data section."""
    kind, shape, offset, nbytes = node.get("dtype"), node.get("shape"), node.get("offset"), node.get("nbytes")
    _need(kind in _DTYPES and type(shape) is list and all(type(s) is int and 0 <= s < 2 ** 40 for s in shape)
          and type(offset) is int and type(nbytes) is int and 0 <= offset and offset + nbytes <= len(data),
          "a bad tensor")
    count = math.prod(shape)
    _need(count * _DTYPES[kind].itemsize == nbytes, "a tensor whose size does not match its shape")
    check_size(tuple(shape))
    arr = np.frombuffer(data, dtype=_DTYPES[kind], count=count, offset=offset)
    return arr.reshape(shape).astype(_DTYPES[kind].newbyteorder("="))


def _parse_json(text):
    """json.loads, nested as deep as the recursion limit allows: from Python 3.12 the C JSON
    decoder stops at Python's fixed C recursion limit (3.11's follows the recursion limit), so
    a header it refuses for depth is read by json's pure-Python decoder."""
    try:
        return json.loads(text)
    except RecursionError:
        decoder = json.JSONDecoder()
        decoder.scan_once = json.scanner.py_make_scanner(decoder)
        return decoder.decode(text)


def decode(blob):
    """The tree stored in checkpoint bytes; raises Damaged if they are not a whole checkpoint."""
    if len(blob) < _PREFIX.size or blob[:len(MAGIC)] != MAGIC:
        raise Damaged("it is not a dg checkpoint (it does not start with the dg checkpoint header)")
    magic, version, header_len, data_len, crc = _PREFIX.unpack_from(blob)
    if version != VERSION:
        raise Damaged(f"it is a checkpoint of format version {version}; this dg reads version {VERSION}")
    start = _PREFIX.size
    if len(blob) != start + header_len + data_len:
        raise Damaged(f"it has {len(blob)} bytes where the header announces "
                      f"{start + header_len + data_len} (truncated or extended)")
    header = blob[start:start + header_len]
    data = blob[start + header_len:]
    if zlib.crc32(data, zlib.crc32(header)) != crc:
        raise Damaged("its checksum does not match (the file is damaged)")
    try:
        meta = _parse_json(header.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        raise Damaged("its header is not valid JSON") from None
    _need(type(meta) is dict and meta.get("format") == "dg-checkpoint" and "tree" in meta,
          "its header does not describe a dg checkpoint")
    return _decode(meta["tree"], data, {})


# ---------------------------------------------------------------- the builtins
def write_atomic(path, blob):
    """Write blob to path via a temporary file in the same directory and a rename."""
    directory = path.parent
    _remove_stale(path)
    # the writer's process id in the name tells a later save whether the writer is gone
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.{os.getpid()}.", suffix=".tmp", dir=directory)
    try:
        with os.fdopen(fd, "wb") as fh:
            _set_mode(fh.fileno(), path)
            fh.write(blob)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    _sync_directory(directory)


def _remove_stale(path):
    """Remove the temporary files of earlier saves to `path` whose process is gone (killed before
    its rename): they would pile up, one per killed save. A save still running keeps its own."""
    prefix = f".{path.name}."
    try:
        names = [e.name for e in os.scandir(path.parent)
                 if e.name.startswith(prefix) and e.name.endswith(".tmp")]
    except OSError:
        return
    for name in names:
        pid = name[len(prefix):].split(".", 1)[0]
        if pid.isdigit() and int(pid) != os.getpid() and not _alive(int(pid)):
            try:
                os.unlink(path.parent / name)
            except OSError:
                pass


def _alive(pid):
    """Whether a process with this id exists (one we may not signal exists too)."""
    if not hasattr(os, "kill") or os.name == "nt":
        return True         # no cheap test there: keep the file
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True
    return True


def _set_mode(fd, path):
    """Give the new file the old one's permissions, or the usual ones (mkstemp makes it private)."""
    if not hasattr(os, "fchmod"):
        return
    try:
        mode = path.stat().st_mode & 0o777
    except OSError:
        mask = os.umask(0)
        os.umask(mask)
        mode = 0o666 & ~mask
    os.fchmod(fd, mode)


def _sync_directory(directory):
    """Make the rename itself durable where the platform allows it."""
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def save(path, tree):
    """save(path, tree): write a checkpoint atomically; returns none."""
    target = sandbox.for_writing(Path(_path_arg(path, "save")).expanduser())
    blob = encode(tree)
    if sandbox.probe(target, "is_dir"):
        raise error("value", f"cannot save to {target}: it is a directory")
    try:
        write_atomic(target, blob)
    except OSError as exc:
        raise error("value", f"cannot save to {target}: {exc.strerror or exc}") from None
    return None


def load(path):
    """load(path): the tree stored by save."""
    source = read_path(path, "load")
    blob = read_limited(source, "load")
    try:
        return decode(blob)
    except Damaged as exc:
        raise error("value", f"cannot load {source}: {exc}") from None


def make(interp):
    """save and load, bound to one interpreter: reading a file is an effect, which jit performs
    again on every call of a function it compiled (a file may change between calls)."""

    def load_(path):
        return perform(interp.staging, load, (path,))

    load_.__name__ = "load"
    load_.__doc__ = load.__doc__
    return {"save": save, "load": load_}
