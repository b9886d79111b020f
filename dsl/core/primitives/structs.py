"""Reads of a field, key or element of a recorded structure: StructField (structs and
tuples) and MapLookup (maps), reference 6.2. The cotangent of a read fills one slot of its
parent's structured cotangent; the tangent of a read is that slot of the parent's tangent."""

from ..ops.slots import map_slot, struct_slot
from ..tape import OneSlot
from ..trees import children, is_container
from .batching import Lanes, Unbatched
from .registry import define


def _slot_of(tree, index):
    """Slot `index` of a tangent tree (None: a zero tangent)."""
    if tree is None or not is_container(tree):
        return None
    return children(tree)[index]


def _field_batch(ns, args, batched, kw):
    """An element of a batched struct or tuple; of a rule's Lanes, unbatched where it says so."""
    s, i = args[0], kw["field_index"]
    v = struct_slot(s, i, kw["total_fields"], kw["name"])
    return Unbatched(v) if type(s) is Lanes and not s.batched[i] else v


define("StructField", lambda s, field_index=0, total_fields=0, name=None: struct_slot(s, field_index, total_fields, name),
       vjp=(lambda ns, g, ans, s, field_index=0, total_fields=0, name=None: OneSlot(field_index, total_fields, g),),
       jvp=lambda ns, tangents, ans, args, kw: _slot_of(tangents[0], kw["field_index"]),
       batch=_field_batch,
       emit={"tuple": "{0}[{field_index}]"},     # a read of a tuple a loop's kernel gave (generated code)
       linear=True)
define("MapLookup", lambda m, key_index=0, total_keys=0, key=None: map_slot(m, key_index, total_keys, key),
       vjp=(lambda ns, g, ans, m, key_index=0, total_keys=0, key=None: OneSlot(key_index, total_keys, g),),
       jvp=lambda ns, tangents, ans, args, kw: _slot_of(tangents[0], kw["key_index"]),
       batch=lambda ns, args, batched, kw: map_slot(args[0], kw["key_index"], kw["total_keys"], kw["key"]),
       linear=True)
