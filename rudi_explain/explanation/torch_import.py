"""PyTorch, imported where the job's student needs it: in a thread of its own, past the search's catalog (issue 27)."""

from __future__ import annotations

import importlib
import sys
import threading
from collections.abc import Callable

from rudi_explain.explanation.config import ExplainConfig
from rudi_explain.students import GSNLN

__all__ = ["needs_torch", "torch_importer"]


def needs_torch(config: ExplainConfig) -> bool:
    """Whether the job will import PyTorch: its student needs it and no one has imported it yet."""
    return "torch" not in sys.modules and (config.student == "gsnln" or isinstance(config.student, GSNLN))


def torch_importer(config: ExplainConfig) -> Callable[[], None]:
    """A call that imports PyTorch in a thread of its own, once, when the student will need it.
    The import (1.6 s) cannot be interrupted: in the student stage it would hold a cancel that long. The search
    starts it past its catalog: beside the catalog's two threads it slowed the first search in a process by about
    a second, and that early pace told the time left twice too long.
    """
    needed = needs_torch(config)
    started = threading.Event()

    def start() -> None:
        if needed and not started.is_set():
            started.set()
            threading.Thread(target=importlib.import_module, args=("torch",), name="rudi-explain: import torch",
                             daemon=True).start()
    return start
