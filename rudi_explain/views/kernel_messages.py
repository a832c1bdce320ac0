"""Widget messages while a notebook cell blocks: the widget's Cancel works during ``exp.wait()``.

A Jupyter kernel runs a cell's code on its main thread, and handles comm
messages (a widget's button clicks) on that same thread, between cells. So a
cell blocked in :meth:`Explanation.wait` would see the widget's Cancel only
after it ends, when there is nothing left to cancel.

ipykernel 7 has kernel subshells (JEP 91): extra shell threads, created with a
``create_subshell_request`` on the control channel, each with its own event
loop. Its shell channel thread asks a comm where to send its messages
(``comm._reply_subshell_for(data, default)``, the hook ipykernel uses to route
a widget's replies to the subshell that is awaiting them). While a wait
blocks, :func:`widget_messages` points that hook of each widget showing the
explanation at one subshell of ours, so their messages are handled there, at
once, on that thread; when the wait ends the hook is removed and messages go
to the main shell again.

Why not a library: ``jupyter-ui-poll`` (1.1.0, the newest on PyPI) is the
well-kept one, and it calls ``kernel.do_one_iteration()``, which ipykernel 7.4
no longer has: it swallows the AttributeError and processes nothing (checked
in a real 7.4 kernel: the comm message was handled only after the cell
ended). Its earlier ipykernel-7 fix disables the kernel's main lock and
replays postponed execute requests, which reaches much deeper into the kernel
than this routing of one comm.

Where any of this is missing (no kernel, ipykernel without subshells, a
closed widget, the subshell request unanswered) nothing is changed: the wait
behaves as it always did.
"""

from __future__ import annotations

import contextlib
import sys
import threading
from collections.abc import Iterator
from typing import Any

__all__ = ["widget_messages"]

#: seconds the control channel may take to answer the subshell request
SUBSHELL_TIMEOUT = 5.0

_lock = threading.Lock()
#: the subshell of this kernel process, once made; False once making it failed (not tried again)
_subshell: str | bool | None = None


def _kernel() -> Any:
    """The running ipykernel kernel if it has subshells, else None."""
    if "ipykernel" not in sys.modules:  # a script, a test, a plain IPython: never import it
        return None
    try:
        from ipykernel.kernelbase import Kernel
    except ImportError:
        return None
    if not Kernel.initialized():
        return None
    kernel = Kernel.instance()
    return kernel if getattr(kernel, "_supports_kernel_subshells", False) else None


def _make_subshell() -> str | None:
    """Ask our own kernel for a subshell over its control channel (the public protocol message)."""
    global _subshell
    with _lock:
        if _subshell is None:
            _subshell = False
            try:
                from ipykernel.connect import get_connection_file
                from jupyter_client import BlockingKernelClient

                client = BlockingKernelClient(connection_file=get_connection_file())
                client.load_connection_file()
                client.start_channels(shell=False, iopub=False, stdin=False, hb=False, control=True)
                try:
                    request = client.session.msg("create_subshell_request", {})
                    client.control_channel.send(request)
                    while True:  # the reply to our request (nothing else is sent to this client)
                        reply = client.control_channel.get_msg(timeout=SUBSHELL_TIMEOUT)
                        if reply["parent_header"].get("msg_id") == request["header"]["msg_id"]:
                            break
                finally:
                    client.stop_channels()
                if reply["content"].get("status") == "ok" and reply["content"].get("subshell_id"):
                    _subshell = str(reply["content"]["subshell_id"])
            except Exception:  # no answer, an older protocol: keep the plain wait
                _subshell = False
        return _subshell if isinstance(_subshell, str) else None


@contextlib.contextmanager
def widget_messages(widgets: list[Any]) -> Iterator[bool]:
    """While the block runs, handle the messages of ``widgets`` on a subshell thread.

    Parameters
    ----------
    widgets : list of ipywidgets.Widget
        The widgets whose messages (Cancel, a drill-down) must not wait for
        the blocked cell.

    Yields
    ------
    bool
        Whether the messages are routed (False: nothing was changed).
    """
    comms = [c for c in (getattr(w, "comm", None) for w in widgets) if c is not None]
    kernel = _kernel() if comms else None
    subshell = _make_subshell() if kernel is not None else None
    if subshell is None:
        yield False
        return
    routed = []
    for comm in comms:
        if "_reply_subshell_for" in vars(comm):  # another wait routes it already (nested): leave it
            continue
        # An instance attribute: ipykernel looks the hook up with getattr; removing it restores
        # the class's own routing (replies to whoever sent last).
        comm._reply_subshell_for = lambda data, default, _to=subshell: _to
        routed.append(comm)
    try:
        yield True
    finally:
        for comm in routed:
            vars(comm).pop("_reply_subshell_for", None)
