"""A loop's history kept at checkpoints: under reverse mode a rolled loop keeps the state each
iteration started from, for the pass back to run an iteration again where the split pullback's
code cannot vouch for it (loop_body.Body.back), and for an outer derivative to read. A state that
holds a tensor the loop writes a row of on every iteration (`traj[i] = state`) is a new tensor
each time: kept whole, the history holds the loop's length times that tensor, its length squared
(12,000 steps of a vector's trajectory under grad: 1.2 GB). Where the split pullback runs the pass back
from what it keeps of each iteration (the residuals), the states are kept only every `every`
iterations, as checkpointed reverse mode keeps them, and a state in between is the body run
again from the checkpoint before it: the same code on the same values, so the same state."""

import math

from ...backends.codegen import run_code
from ...core.primitives.loops import History
from ...core.tape import peek

# a history of at least this many entries (iterations times the numbers in a state) is kept at
# checkpoints (32 MB of float64s), or of ROWS_FROM where the body writes rows of its state: kept
# whole, its forward loop makes a new tensor per row written, at checkpoints it writes in place
CHECKPOINT_FROM = 2 ** 22
ROWS_FROM = 2 ** 16
MIN_ITEMS = 64


def wants_checkpoints(items, state, program):
    """Whether the history of a loop over `items` from `state`, of a body whose program is
    `program`, is large enough to keep at checkpoints."""
    if items is None or len(items) < MIN_ITEMS:
        return False
    entries = len(items) * sum(getattr(peek(x), "size", 1) for x in state)
    return entries >= CHECKPOINT_FROM or (entries >= ROWS_FROM and writes_rows(program))


def writes_rows(program):
    """Whether a loop body's program writes a row of a tensor of its state (SetRow)."""
    state = set(program.inputs[1:])
    return any(step[1] == "SetRow" and step[2][0] in state for step in program.steps)


class Checkpointed(History):
    """A History whose states are kept every `every` iterations once `start` is called (until
    then, every state, as History keeps them), with the block of states last asked for: walked
    backwards, as the pass back walks them, each block is computed once. Read as a sequence
    (len, an index, iteration), it is the list of every iteration's starting state."""

    __slots__ = ("every", "marks", "count", "block", "rerun", "items")

    def __init__(self, body=None):
        super().__init__(body)
        self.every = None

    def start(self, items, rerun):
        """Keep a state every √n iterations of the n `items` from here on; `rerun(item, state)`
        gives the state after one iteration."""
        self.every = max(8, math.isqrt(len(items)))
        self.marks, self.count, self.block, self.rerun, self.items = [], 0, None, rerun, items

    def __len__(self):
        return super().__len__() if self.every is None else self.count

    def __bool__(self):
        return len(self) > 0

    def __getitem__(self, k):
        if self.every is None:
            return super().__getitem__(k)
        if type(k) is slice:
            return [self[j] for j in range(*k.indices(self.count))]
        if k < 0:
            k += self.count
        if not 0 <= k < self.count:
            raise IndexError("history index out of range")
        c = k // self.every
        if self.block is None or self.block[0] != c:
            states, end = [self.marks[c]], min((c + 1) * self.every, self.count)
            for j in range(c * self.every, end - 1):
                states.append(self.rerun(self.items[j], states[-1]))
            self.block = (c, states)
        return self.block[1][k - c * self.every]

    def __iter__(self):
        if self.every is None:
            return super().__iter__()
        return (self[k] for k in range(self.count))

    def __reversed__(self):
        if self.every is None:
            return super().__reversed__()
        return (self[k] for k in range(self.count - 1, -1, -1))


def run_checkpointed(body, forward, items, state, fixed, kept):
    """Body.run's split forward loop keeping `kept`'s states at checkpoints: the loop run in
    pieces of kept.every iterations, the state each piece starts from kept."""
    n = len(state)

    def rerun(item, values):
        return list(run_code(forward.program, forward.code, [item, *values, *fixed])[:n])
    kept.start(items, rerun)
    driver, every = forward.driver(), kept.every
    for start in range(0, len(items), every):
        kept.marks.append(list(state))
        state = driver.run(forward, items[start:start + every], state, fixed, None, kept.residuals, body)
        kept.count = min(start + every, len(items))
    return state
