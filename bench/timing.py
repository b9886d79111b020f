"""Timing and memory helpers shared by the benchmarks."""

import gc
import os
import statistics
import time
import tracemalloc


# CPU time of this process (all its threads) leaves out the time other
# processes held the cores, which on a busy 2-core machine is most of the
# noise; with one BLAS thread it equals the wall time of an idle machine.
CLOCKS = {"cpu": time.process_time, "wall": time.perf_counter}


def clock_name():
    """Which clock this run uses: DG_BENCH_CLOCK, `cpu` (the default) or `wall`."""
    name = os.environ.get("DG_BENCH_CLOCK", "cpu")
    if name not in CLOCKS:
        raise ValueError(f"DG_BENCH_CLOCK must be one of {', '.join(CLOCKS)}, not {name!r}")
    return name


def measure(fns, reps, warmup=2, min_block=0.002):
    """Time each callable in `fns` (name -> fn) `reps` times, interleaved; name -> list of
    seconds per call.

    Every callable runs `warmup` times first (the fastest of those calls sizes its blocks: a
    first call may stage or compile, which later calls do not). The rounds interleave the callables
    (alternating their order) so that a slow spell on a shared machine hits dg and its
    references alike, and a collection runs before each timing so one call's garbage is not
    charged to the next. A call shorter than `min_block` is timed as a block of calls that
    lasts about that long, as timeit does: the collection leaves the caches cold, which
    costs a fixed time that would otherwise count against a sub-millisecond call alone.

    What is alive when timing starts (the libraries the references import, the programs
    under test) is long-lived and never garbage: it is frozen (gc.freeze) for the timings,
    so that each collection walks only what the timed calls made. A full walk of JAX's and
    PyTorch's 250,000 objects before every call evicted the caches and charged a call that
    writes a large tape (dg's eager projectile: 14 ms became 18 ms) for cache misses that
    no loop of calls pays, since nothing but a benchmark forces a full collection each time.
    """
    gc.collect()
    gc.freeze()
    try:
        return _measure(fns, reps, warmup, min_block)
    finally:
        gc.unfreeze()


def _measure(fns, reps, warmup, min_block):
    """measure(), with the long-lived objects frozen."""
    now = CLOCKS[clock_name()]
    names = list(fns)
    number = {}
    for name in names:
        took = float("inf") if warmup else 0.0
        for _ in range(warmup):
            t0 = time.perf_counter()
            fns[name]()
            took = min(took, time.perf_counter() - t0)
        number[name] = max(1, min(1000, int(min_block / took) + 1)) if 0 < took < min_block else 1
    times = {name: [] for name in names}
    for r in range(reps):
        for name in (names if r % 2 == 0 else names[::-1]):
            fn, k = fns[name], number[name]
            gc.collect()
            t0 = now()
            for _ in range(k):
                fn()
            times[name].append((now() - t0) / k)
    return times


def median(xs):
    """The median of a list of numbers."""
    return statistics.median(xs)


def rss_bytes():
    """The resident memory of this process now, in bytes (Linux /proc; the peak elsewhere)."""
    try:
        with open("/proc/self/statm") as fh:
            return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        import resource
        import sys
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        return peak if sys.platform == "darwin" else peak * 1024


def traced_peak(fn):
    """Run fn() under tracemalloc; return the peak bytes allocated during the call.

    numpy reports its buffers to tracemalloc, so this counts tensors as well
    as Python objects (tape nodes, boxes), and nothing allocated before.
    """
    gc.collect()
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        fn()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
