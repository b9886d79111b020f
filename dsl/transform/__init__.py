"""The transformations, each an interpreter over the core's primitives: reverse mode
(transforms.py: grad, value_and_grad, jacobian, ...), forward mode (forward.py), linearize,
custom rules (custom.py), vmap (vmap.py) and staging with jit (jit/), which rolls dg's own loops
and branches. Imports the backends, the core and the base layer."""
