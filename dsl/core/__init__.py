"""The core: dg's values and operations, boxes and traces, the primitives with their rules,
the tape's reverse pass, and staged programs. Imports the base layer only (and numpy).

    values.py, printing.py, format_spec.py   the runtime values and their text
    tape.py, trees.py, reverse_pass.py       boxes, traces, the tape and its reverse pass
    ops/                                      operations, each `record`ing its primitive when boxed
    primitives/                               every primitive declared once with its rules
    stage.py                                  staged programs (what jit and vmap record)
"""
