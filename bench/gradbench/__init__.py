"""dg as a GradBench tool (https://github.com/gradbench/gradbench).

`python -m bench.gradbench` speaks GradBench's protocol on standard input and
output, one JSON object per line (protocol.py). Each eval is a dg program in
this folder, NAME.dg, which ends with a map `gradbench` from the eval's function
names to dg functions; convert.py turns JSON inputs into dg values and dg
results back into JSON. See docs/gradbench.md for how to run the real evals.
"""
