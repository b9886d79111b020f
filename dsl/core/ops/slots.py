"""Reads of one slot of a recorded struct, map or tuple: StructField and MapLookup record the
slot's index, so a gradient flows to that field, key or element alone."""

from ..tape import Box, peek, record_read
from ..values import Struct


def struct_slot(s, field_index, total_fields, name):
    """Field `field_index` of a struct or tuple, recording StructField when boxed."""
    if type(s) is Box:      # the value may itself be boxed by an outer differentiation: it records there
        read = s.trace.reads.get((s, field_index))      # an earlier read of this slot (record_read)
        if read is not None:
            return read
        return record_read("StructField", s, struct_slot(s.v, field_index, total_fields, name),
                           {"field_index": field_index, "total_fields": total_fields, "name": name}, field_index)
    return s.vals[field_index] if type(s) is Struct else s[field_index]


def map_slot(m, key_index, total_keys, key):
    """The value of `key` in a map, recording MapLookup (with the key's position) when boxed."""
    if type(m) is Box:
        read = m.trace.reads.get((m, key_index))
        if read is not None:
            return read
        return record_read("MapLookup", m, map_slot(m.v, key_index, total_keys, key),
                           {"key_index": key_index, "total_keys": total_keys, "key": key}, key_index)
    return m[key]


def unpack(v):
    """A recorded struct, map or tuple as a plain one whose elements are recorded reads."""
    if type(v) is not Box:
        return v
    s = peek(v)
    t = type(s)
    if t is Struct:
        n = len(s.vals)
        return Struct(s.sdef, [struct_slot(v, i, n, f) for i, f in enumerate(s.sdef.fields)])
    if t is tuple:
        n = len(s)
        return tuple(struct_slot(v, i, n, i) for i in range(n))
    if t is dict:
        n = len(s)
        return {k: map_slot(v, i, n, k) for i, k in enumerate(s)}
    return v
