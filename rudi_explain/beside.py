"""One computation run beside the job in a forked process, its small result read back as JSON.

Why a process: the search's MCTS-SG tree and the stages after it are Python-bound, so two threads
share one core through the GIL (two explain() jobs in two threads took 6.7 s against 5.8 s one after
the other, edits at 5,000 users). A fork shares the caller's memory (the events, the caches, the
search's state) without copying or pickling it, and the child sends back a few numbers.

Only on Linux (``os.fork`` without exec is unsafe on macOS and absent on Windows), and only where the
job may use two cores. The child runs one function with warnings and output silenced (its file
descriptors 1 and 2 go to ``/dev/null``: a kernel's streams are the parent's), writes its JSON
result to a pipe and leaves with ``os._exit`` (no clean-up of state it shares with the parent).
Anything that goes wrong in it (an error, a crash, a result that is not JSON) comes back as
``None`` from :meth:`Beside.result`, and the caller computes the same thing itself.
"""

from __future__ import annotations

import json
import os
import select
import signal
import sys
import warnings
from collections.abc import Callable
from typing import Any

__all__ = ["can_fork", "Beside"]

#: Set to "0" to never fork (the work is then done in the calling thread, with the same results).
ENV_SWITCH = "RUDI_EXPLAIN_FORK"


#: Seconds between two cancel checks while :meth:`Beside.result` waits.
POLL = 0.1
#: True in a child: its work stays in it (a child of a child would only share the same two cores).
_in_child = False


def can_fork(n_jobs: int) -> bool:
    """Whether work may go to a forked process: Linux, two workers or more, not in a child, not switched off."""
    return (sys.platform.startswith("linux") and hasattr(os, "fork") and n_jobs >= 2 and not _in_child
            and os.environ.get(ENV_SWITCH, "1") != "0")


class Beside:
    """``fn()`` running in a forked child; :meth:`result` waits for its JSON-able return value.

    Parameters
    ----------
    fn : callable
        Called once in the child with no arguments; it must return something ``json.dumps`` takes.
        The child sees the caller's memory as it was at the fork: what ``fn`` changes stays there.
    """

    def __init__(self, fn: Callable[[], Any]) -> None:
        read, write = os.pipe()
        with warnings.catch_warnings():
            # Python 3.12+ warns of fork in a process with threads: the child only computes (no lock
            # another thread may hold is taken there: no output, no logging, no pool it inherited).
            warnings.simplefilter("ignore", DeprecationWarning)
            pid = os.fork()
        if pid == 0:  # the child: never returns
            os.close(read)
            _run_child(fn, write)
        os.close(write)
        self._pid: int | None = pid
        self._read = read
        self._value: Any = None
        self._done = False

    @classmethod
    def done(cls, value: Any) -> Beside:
        """A computation already done here (where no process could start): :meth:`result` is ``value``."""
        out = cls.__new__(cls)
        out._pid, out._read, out._value, out._done = None, -1, value, True
        return out

    def ready(self) -> bool:
        """Whether the child has finished (its result can be read without waiting)."""
        if self._done:
            return True
        return bool(select.select([self._read], [], [], 0)[0])

    def result(self, should_stop: Callable[[], Any] | None = None) -> Any:
        """The child's return value, once it has finished; ``None`` where it failed.

        ``should_stop`` is called every :data:`POLL` seconds while the child runs (a cancel check: it may
        raise, and the child is then stopped; a true value stops it too, and the result is ``None``).
        """
        if not self._done:
            chunks = []
            while True:
                if should_stop is not None and not select.select([self._read], [], [], POLL)[0]:
                    try:
                        stop = should_stop()
                    except BaseException:
                        self.close()
                        raise
                    if stop:
                        self.close()
                        return None
                    continue
                chunk = os.read(self._read, 1 << 16)
                if not chunk:
                    break
                chunks.append(chunk)
            self._finish()
            try:
                payload = json.loads(b"".join(chunks).decode())
                self._value = payload["value"] if payload.get("ok") else None
            except (ValueError, KeyError, TypeError, AttributeError):
                self._value = None
        return self._value

    def close(self) -> None:
        """Stop the child if it is still running (a cancel, an error in the caller); idempotent."""
        if self._pid is not None and not self._done:
            try:
                os.kill(self._pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            self._finish()

    def _finish(self) -> None:
        self._done = True
        os.close(self._read)
        if self._pid is not None:
            os.waitpid(self._pid, 0)  # reaped: no zombie left behind
            self._pid = None

    def __del__(self) -> None:
        if getattr(self, "_pid", None) is not None and not getattr(self, "_done", True):
            self.close()


def _run_child(fn: Callable[[], Any], write: int) -> None:
    global _in_child
    _in_child = True
    code = 1
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, 1)
        os.dup2(devnull, 2)
        # the Python streams too: a kernel's (or pytest's) write elsewhere than descriptors 1 and 2
        sys.stdout = sys.stderr = open(devnull, "w", closefd=False)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            value = fn()
        data = json.dumps({"ok": True, "value": value}).encode()
        code = 0
    except BaseException:  # whatever happened, the parent learns only that it failed
        data = b'{"ok": false}'
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(write, view):]
    finally:
        os._exit(code)
