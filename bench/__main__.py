"""`python -m bench`: run the benchmark suite (see bench/run.py for the options)."""

import sys

from bench.run import main

sys.exit(main())
