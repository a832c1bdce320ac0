"""Helpers of the tests of work beside the job (rudi_explain.beside): whether a process is gone, and every
forked child a test makes."""

import os

from rudi_explain.beside import Beside


def gone(pid: int) -> bool:
    """Whether no process has this id (a child reaped, or never there)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


def record_children(monkeypatch) -> list[tuple[Beside, int]]:
    """A list that gets each :class:`Beside` made from now on, with its child's pid."""
    made: list[tuple[Beside, int]] = []
    init = Beside.__init__

    def record(self, fn):
        init(self, fn)
        made.append((self, self._pid))
    monkeypatch.setattr(Beside, "__init__", record)
    return made
