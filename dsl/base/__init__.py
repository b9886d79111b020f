"""The base layer: what every other layer uses and which uses none of them. Limits, Cells (where
a captured or module-level variable lives), finding the grammar and the standard library, reading
source files, the file sandbox, the garbage collector's pauses, the big stack for deep recursion,
and the "did you mean" of misspelled names. (Errors, which users import as dsl.errors, sit at the
package's root but belong here.)"""
