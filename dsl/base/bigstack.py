"""A C stack big enough for the call depth the host asked for.

Python 3.11 turns deep recursion into a RecursionError only while the C
stack lasts: a dg call that passes through C code (a builtin calling a dg
function, `grad`, `tree_map`) uses a few kilobytes of it, and the main
thread usually has 8 MiB. With the default depth limit that is enough; a
raised limit (`--max-depth 100000`) would crash the process with a
segmentation fault long before the limit. So a run whose limit needs more
stack than the current thread has runs on a helper thread whose stack is
sized for it, while the calling thread waits (and forwards Ctrl-C); on
Linux, the main thread's own stack may grow instead, up to 120 MiB.
"""

import resource
import sys
import threading

from ..errors import error

STACK_PER_CALL = 8 * 1024          # bytes of C stack one dg call may use, generously
HEADROOM = 4 * 1024 * 1024         # for the interpreter itself around the run
DEFAULT_STACK = 8 * 1024 * 1024    # what a thread usually gets

_local = threading.local()
_size_lock = threading.Lock()


def _available():
    """The C stack of the current thread, as far as it can be known."""
    if getattr(_local, "size", None):
        return _local.size
    if threading.current_thread() is threading.main_thread():
        soft, _ = resource.getrlimit(resource.RLIMIT_STACK)
        if soft != resource.RLIM_INFINITY and soft > 0:
            return soft
        return DEFAULT_STACK
    return threading.stack_size() or DEFAULT_STACK


def needed(max_depth):
    """Whether a run allowing `max_depth` nested calls needs a bigger stack than this thread's.
    Known once per thread and depth: a thread's stack does not shrink, and asking the system
    (two getrlimit calls) was a third of a small jitted call's cost from Python."""
    known = getattr(_local, "needed", None)
    if known is None:
        known = _local.needed = {}
    answer = known.get(max_depth)
    if answer is None:
        need = max_depth * STACK_PER_CALL
        answer = known[max_depth] = need > _available() and not _grow_main_stack(need + HEADROOM)
    return answer


# Linux grows the main thread's stack on demand up to the soft RLIMIT_STACK, read when the stack
# grows, and keeps at least 128 MiB free below it for that: raising the soft limit lets the main
# thread itself run the default depth, with no helper thread per run.
MAIN_GROWTH = 120 * 1024 * 1024


def _grow_main_stack(size):
    """Raise the main thread's stack limit to `size` where that is possible; whether it was."""
    if sys.platform != "linux" or size > MAIN_GROWTH or threading.current_thread() is not threading.main_thread():
        return False
    soft, hard = resource.getrlimit(resource.RLIMIT_STACK)
    if soft == resource.RLIM_INFINITY or soft >= size:
        return True
    if hard != resource.RLIM_INFINITY and hard < size:
        return False
    try:
        resource.setrlimit(resource.RLIMIT_STACK, (size, hard))
    except (ValueError, OSError):
        return False
    return True


def run(fn, args, kwargs, max_depth):
    """Call fn(*args, **kwargs) on a thread with a stack for `max_depth` calls; return or raise its outcome."""
    size = max_depth * STACK_PER_CALL + HEADROOM
    outcome = {}
    done = threading.Event()

    def target():
        _local.size = size
        try:
            outcome["value"] = fn(*args, **kwargs)
        except BaseException as exc:      # handed to the waiting thread, which raises it
            outcome["error"] = exc
        finally:
            done.set()

    with _size_lock:
        try:
            old = threading.stack_size(size)
        except (ValueError, OverflowError):
            raise _too_big(max_depth) from None
        try:
            worker = threading.Thread(target=target, name="dg-run", daemon=True)
            worker.start()
        except (RuntimeError, MemoryError):
            raise _too_big(max_depth) from None
        finally:
            threading.stack_size(old)
    _wait(worker, done)
    if "error" in outcome:
        raise outcome["error"]
    return outcome.get("value")


def _wait(worker, done):
    """Wait for the worker; a first Ctrl-C is raised inside it, a second one here at once.

    (Not Thread.join: in Python 3.11 a Ctrl-C inside join() can mark a running thread stopped.)
    """
    interrupted = False
    while not done.is_set():
        try:
            done.wait(1.0 if interrupted else None)
        except KeyboardInterrupt:
            if interrupted:
                raise
            interrupted = True
        if interrupted and not done.is_set():
            # raised again while the worker runs on: an asynchronous exception that lands in a
            # destructor or a weakref callback is printed and dropped, and the program went on
            # (a runaway loop then never stopped)
            import ctypes       # here, not at the top: every `dg run` would pay for it
            ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(worker.ident),
                                                       ctypes.py_object(KeyboardInterrupt))
    worker.join()


def _too_big(max_depth):
    """The error when the machine cannot give a thread the stack a depth limit needs."""
    return error("limit", f"a call depth limit of {max_depth:,} needs a larger stack than this "
                          "machine allows", hint="lower it with --max-depth or Interpreter(max_depth=...)")
