"""`python -m bench.gradbench`: answer GradBench messages from standard input until it ends."""

import sys

from bench.gradbench.protocol import serve

if __name__ == "__main__":
    serve(sys.stdin, sys.stdout)
