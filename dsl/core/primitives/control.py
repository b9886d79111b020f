"""Primitives that run dg code: Checkpoint (recomputed in backward) and the effects of staged
programs (print, random draws, the clock). custom_vjp's and custom_jvp's steps are declared
with their rules in dsl/transform/custom.py, a host function's in dsl/runtime/embed.py.

Under jit and vmap, Checkpoint is not recorded: the function it wraps is staged like any
other code (dsl/transform/transforms.py). Under forward mode it just runs its function.
"""

from .. import reverse_pass
from ..stage import _effect_kernel, layout
from ..trees import cotangent_value, flatten, unflatten
from .registry import define


# ---------------------------------------------------------------- checkpoint
def _checkpoint_kernel(*leaves, spec=None, kwargs=None, fn=None, **_):
    """The checkpointed function on its arguments."""
    return fn(*unflatten(spec, leaves), **kwargs)


def _checkpoint_rule(ns, g, ans, leaves, kw, wanted):
    """Re-run the function on a fresh trace and pull the cotangent through it."""
    return reverse_pass.pull_back(lambda *boxed: _replay(kw, boxed), leaves, wanted, cotangent_value(g, ans),
                                  kw["check"])


def _replay(kw, boxed):
    """Run a checkpointed function again with the random generator as it was in the forward pass."""
    generator, state = kw.get("generator"), kw.get("state")
    if state is None:
        return kw["fn"](*unflatten(kw["spec"], boxed), **kw["kwargs"])
    gen = generator()
    now = gen.bit_generator.state
    gen.bit_generator.state = state
    try:
        return kw["fn"](*unflatten(kw["spec"], boxed), **kw["kwargs"])
    finally:
        gen.bit_generator.state = now


define("Checkpoint", _checkpoint_kernel, vjp_all=_checkpoint_rule, user_code=True)


# ---------------------------------------------------------------- effects (jit and vmap)
# print, random draws, the clock: performed again, in order, each time a staged program runs
define("Effect", _effect_kernel, differentiable=False, effect=True, can_fail=True)
# an effect's structured result, taken apart: its layout (a guard reads it) and its leaves
define("EffectLayout", layout, differentiable=False)
define("EffectLeaf", lambda tree, i: flatten(tree)[0][i], differentiable=False)
