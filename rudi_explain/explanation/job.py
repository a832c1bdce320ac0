"""The explain job as it runs: a worker thread (or the caller's), its progress events, cancel and wait.

A :class:`Job` runs one call of the pipeline and ends in a :class:`concurrent.futures.Future`:
``done`` is the future's, a blocked :meth:`Job.wait` waits on it. The worker is a daemon
:class:`threading.Thread` that completes the future, not a ``ThreadPoolExecutor``: an
executor's workers are joined when the interpreter exits, so a script that forgot a running job
would hang until it ended, where a notebook cell re-run leaves old jobs behind by design
(:func:`running` finds them).
"""

from __future__ import annotations

import contextlib
import sys
import threading
import time
import warnings
import weakref
from collections.abc import Callable, Iterator
from concurrent import futures
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from rudi_explain.exceptions import StateError, WaitTimeout
from rudi_explain.explanation.eta import TimeLeft
from rudi_explain.search.statistics_search import SearchCancelled
from rudi_explain.statistics import Statistic
from rudi_explain.teachers.adapters import Teacher

if TYPE_CHECKING:
    from typing_extensions import Self

__all__ = ["Job", "JobControls", "JobInputs", "JobProgress", "ExplanationCancelled", "WaitInterrupted", "running",
           "STAGES",
           "add_wait_context"]

STAGES = ("teacher", "search", "literals", "student", "evaluate")
#: seconds between checks while waiting for a job (an interrupt is seen within one)
WAIT_STEP = 0.1
#: seconds an interrupted wait gives the cancelled job to stop before returning
CANCEL_GRACE = 2.0
#: the owners (explanations) whose job is running, with the time their job started, for :func:`running`
_RUNNING: weakref.WeakKeyDictionary[Any, float] = weakref.WeakKeyDictionary()
_RUNNING_LOCK = threading.Lock()
#: contexts a blocked wait enters, each made for the job's owner (see :func:`add_wait_context`)
_WAIT_CONTEXTS: list[Callable[[Any], AbstractContextManager[Any]]] = []


def running() -> list[Any]:
    """The explanations whose job is still running, oldest first.

    Re-running a notebook cell cancels the job that cell started before (the re-run replaces
    it); jobs started elsewhere (another cell, a console, ``exp.retry()``) run on and share the
    CPU. This finds them, e.g. ``for e in rx.running(): e.cancel()``. Each one's ``repr`` tells
    them apart: when it started, the users, the settings that differ from the defaults and the
    stage; ``started_at`` and ``cell`` say the same to code.
    """
    with _RUNNING_LOCK:
        started = list(_RUNNING.items())
    return [owner for owner, _ in sorted(started, key=lambda item: item[1])]


def add_wait_context(factory: Callable[[Any], AbstractContextManager[Any]]) -> None:
    """Have every blocked :meth:`Job.wait` enter ``factory(explanation)`` while it blocks.

    The notebook widget registers one when it is imported, so that its messages (Cancel) are
    handled while the kernel's main thread waits (:mod:`rudi_explain.views.kernel_messages`);
    this module never imports a view.
    """
    if factory not in _WAIT_CONTEXTS:
        _WAIT_CONTEXTS.append(factory)


class WaitInterrupted(KeyboardInterrupt):
    """An interrupted ``wait()``: still a KeyboardInterrupt (a script stops), shown by IPython as
    the one word a plain interrupt shows, not 50 lines of the waiting loop; the line before it
    said what became of the job."""

    def _render_traceback_(self) -> list[str]:
        return ["KeyboardInterrupt"]


class ExplanationCancelled(StateError):
    """The job was cancelled before it finished.

    Attributes
    ----------
    statistics : list of Statistic
        The statistics the search had found (also ``exp.statistics``).
    """

    def __init__(self, message: str = "the explanation was cancelled", statistics: Any = ()) -> None:
        super().__init__(message)
        self.statistics = list(statistics)

    def _render_traceback_(self) -> list[str]:
        # IPython shows this instead of a traceback: a stop the user asked for is not a crash, and
        # the job thread's 60 frames told them nothing.
        return [f"{type(self).__name__}: {self}"]


@dataclass(frozen=True)
class JobProgress:
    """One progress event of the explain job.

    Attributes
    ----------
    stage : str
        'teacher', 'search', 'literals', 'student', 'evaluate' or 'done'.
    step, total : int
        Where the stage is (e.g. statistic 3 of 20, epoch 120 of 500).
    message : str
        A line for people.
    numbers : dict
        Stage figures: the statistic searched and its reward, the training
        loss and running fidelity, ...; ``seconds_left``: the job's estimate of
        its seconds left (:mod:`rudi_explain.explanation.eta`), None without one.
    elapsed : float
        Seconds since the job started.
    """

    stage: str
    step: int
    total: int
    message: str
    numbers: dict = field(default_factory=dict)
    elapsed: float = 0.0


@dataclass(frozen=True)
class JobInputs:
    """What :func:`~rudi_explain.explanation.explain` was given besides the data and settings.

    Attributes
    ----------
    teacher : Teacher or None
        The model it queried; None when it was given the scores.
    scores, labels : object
        The scores and labels as given (None when not given).
    """

    teacher: Teacher | None
    scores: Any = None
    labels: Any = None


class Job:
    """One run of the explain pipeline: its status, progress events, cancel and wait.

    Parameters
    ----------
    owner : object
        The explanation the job fills in: listed by :func:`running` while the job runs, and given
        to the wait contexts.
    listeners : list of callable
        Called with every :class:`JobProgress`; the owner's list, so that a listener added while
        the job runs hears the rest.

    Attributes
    ----------
    status : str
        'pending', 'running', 'done', 'failed' or 'cancelled'.
    progress : JobProgress or None
        The last event.
    history : list of JobProgress
        The events worth keeping (a search stage keeps its first and last).
    error : BaseException or None
        Why the job failed or stopped.
    found : list of Statistic
        The statistics found so far: kept when the job is cancelled.
    seconds : dict
        Seconds per stage, filled in as the stages end.
    stop_message : str
        Where a failed or cancelled job stopped, in words.
    """

    def __init__(self, owner: Any, listeners: list[Callable[[JobProgress], Any]]) -> None:
        self._owner = weakref.ref(owner)
        self._listeners = listeners
        self.status = "pending"
        self.progress: JobProgress | None = None
        self.history: list[JobProgress] = []
        self.error: BaseException | None = None
        self.found: list[Statistic] = []
        self.seconds: dict[str, float] = {}
        self.stop_message = "the explanation was cancelled"
        self.started = time.perf_counter()
        self.started_at = time.time()  # the wall-clock time, for people (rx.running() tells jobs apart by it)
        self._cancel = threading.Event()
        self._future: futures.Future[Any] = futures.Future()
        self._thread: threading.Thread | None = None
        self._ident: int | None = None  # the thread running the job, once it runs
        self._told_waiting = False
        self._time_left = TimeLeft()

    @classmethod
    def finished(cls, owner: Any, history: list[JobProgress]) -> Job:
        """A job that ended well before it was made here (an explanation loaded or derived)."""
        job = cls(owner, [])
        job.history = list(history)
        job.progress = job.history[-1] if job.history else None
        job.status = "done"
        job._future.set_result(None)
        return job

    # ------------------------------------------------------------ events
    @property
    def elapsed(self) -> float:
        """Seconds since the job started."""
        return time.perf_counter() - self.started

    def emit(self, stage: str, step: int, total: int, message: str, **numbers: Any) -> None:
        """Record a progress event and tell every listener (a failing listener is ignored)."""
        elapsed = self.elapsed
        numbers["seconds_left"] = self._time_left.update(stage, step, total, numbers, elapsed)
        event = JobProgress(stage, step, total, message, numbers, elapsed)
        self.progress = event
        if stage != "search" or step == total or not self.history or self.history[-1].stage != stage:
            self.history.append(event)
        for listener in list(self._listeners):
            try:
                listener(event)
            except Exception:  # a broken display must not break the job
                pass

    def stopping(self) -> bool:
        """Whether a cancel was asked for."""
        return self._cancel.is_set()

    def check_cancel(self) -> None:
        """Raise :class:`ExplanationCancelled` when a cancel was asked for."""
        if self._cancel.is_set():
            raise ExplanationCancelled("the explanation was cancelled")

    def cancel(self) -> None:
        """Ask the job to stop at its next check (within a second or so)."""
        self._cancel.set()

    def stop(self, grace: float = CANCEL_GRACE) -> bool:
        """Cancel the job and give it up to ``grace`` seconds to stop. Whether it has ended."""
        self.cancel()
        return bool(futures.wait((self._future,), timeout=grace).done)

    # ------------------------------------------------------------ running
    @property
    def done(self) -> bool:
        """Whether the job has ended (finished, failed or cancelled)."""
        return self._future.done()

    def in_job(self) -> bool:
        """Whether the caller is the job itself (its thread, while it runs)."""
        return not self.done and self._ident == threading.get_ident()

    def start(self, work: Callable[[Job], Any], finish: Callable[[Any], str]) -> None:
        """Run ``work`` in a daemon worker thread; see :meth:`run`."""
        self._thread = threading.Thread(target=self.run, args=(work, finish), daemon=True, name="rudi-explain")
        self._thread.start()

    def run(self, work: Callable[[Job], Any], finish: Callable[[Any], str]) -> None:
        """Run ``work(self)`` here; hand its result to ``finish``, whose line ends the 'done' event.

        A failure or a cancel is recorded (``error``, ``status``, a 'failed' or 'cancelled'
        event saying where it stopped), not raised: :meth:`wait` re-raises it.
        """
        self._ident = threading.get_ident()
        self.status = "running"
        owner = self._owner()
        if owner is not None:
            with _RUNNING_LOCK:
                _RUNNING[owner] = self.started
        try:
            result = work(self)
            summary = finish(result)
            self.status = "done"
            self.emit("done", 1, 1, summary)
        except BaseException as err:  # re-raised by wait()
            self.error = err
            cancelled = isinstance(err, (ExplanationCancelled, SearchCancelled))
            if isinstance(err, SearchCancelled):  # what the search found is kept
                self.found = list(err.statistics)
            self.status = "cancelled" if cancelled else "failed"
            # where it stopped, so a view keeps the stages done and the bar where it was
            reached = self.progress if self.progress is not None and self.progress.stage in STAGES else None
            stage = reached.stage if reached is not None else STAGES[0]
            k = len(self.found)
            kept = (f"; the {k} statistic{'s' if k > 1 else ''} found {'are' if k > 1 else 'is'} kept "
                    "(exp.statistics)") if k else ""
            message = (f"cancelled during the {stage} stage{kept}" if cancelled
                       else f"{type(err).__name__}: {err}")
            self.stop_message = message
            self.emit(self.status, reached.step if reached else 0, reached.total if reached else 1, message,
                      reached=stage, found=[str(st) for st in self.found])
        finally:
            if owner is not None:
                with _RUNNING_LOCK:
                    _RUNNING.pop(owner, None)
            self._future.set_result(self.status)

    # ------------------------------------------------------------ waiting
    def wait(self, timeout: float | None = None) -> bool:
        """Wait for the job in short steps; an interrupt cancels it. Whether it ended.

        Raises
        ------
        WaitInterrupted
            The wait was interrupted (Ctrl-C, the notebook's Interrupt): the job is cancelled
            too, and a line on stderr says so.
        """
        deadline = None if timeout is None else time.monotonic() + timeout
        try:
            with self._wait_contexts():
                # short waits: a KeyboardInterrupt reaches this thread between them at once
                while not futures.wait((self._future,), timeout=WAIT_STEP).done:
                    if deadline is not None and time.monotonic() >= deadline:
                        return False
        except KeyboardInterrupt:
            stopped = self.stop()
            print("interrupted: the explanation was cancelled" + ("" if stopped else
                  " (it stops at its next check, within a second or so)"), file=sys.stderr, flush=True)
            raise WaitInterrupted("the wait was interrupted and the explanation cancelled") from None
        return True

    @contextlib.contextmanager
    def _wait_contexts(self) -> Iterator[None]:
        owner = self._owner()
        with contextlib.ExitStack() as stack:
            if owner is not None:
                for factory in list(_WAIT_CONTEXTS):
                    stack.enter_context(factory(owner))
            yield

    def wait_with_note(self, what: str) -> None:
        """Wait for a job that still runs, saying once (on stderr) what waits and how to stop it."""
        if self.done:
            return
        if not self._told_waiting:
            self._told_waiting = True
            print(f"{what}: waiting for the explanation to finish "
                  f"({self.progress.message if self.progress else 'starting'}); "
                  "exp.cancel() or an interrupt stops it", file=sys.stderr, flush=True)
        self.wait()


class JobControls:
    """The controls of an object filled in by a :class:`Job`: status, progress, wait, cancel, retry.

    :class:`~rudi_explain.explanation.Explanation` inherits them. A subclass sets ``_job`` (the
    current run), ``_listeners`` (kept across runs, so that a widget follows a retry), ``_work``
    (what a run runs; None for an explanation that cannot run again) and ``_result``, and defines
    ``_finish(result) -> str`` (keep the result; the 'done' event's line).
    """

    _job: Job
    _listeners: list[Callable[[JobProgress], Any]]
    _work: Callable[[Job], Any] | None
    _result: Any
    _cell: str | None = None

    def _finish(self, result: Any) -> str:
        raise NotImplementedError

    @property
    def status(self) -> str:
        """'pending', 'running', 'done', 'failed' or 'cancelled'."""
        return self._job.status

    @property
    def progress(self) -> JobProgress | None:
        """The job's last progress event."""
        return self._job.progress

    @property
    def started_at(self) -> float:
        """When the job started, in seconds since the epoch (:func:`time.time`)."""
        return self._job.started_at

    @property
    def cell(self) -> str | None:
        """The id of the notebook cell whose run started the job (a re-run of it cancels the job); None outside one."""
        return self._cell

    @property
    def stop_message(self) -> str:
        """Where a failed or cancelled job stopped, in words ('' while it runs and once it is done)."""
        job = self._job
        return job.stop_message if job.status in ("failed", "cancelled") else ""

    @property
    def history(self) -> list[JobProgress]:
        """The job's progress events worth keeping (a copy)."""
        return list(self._job.history)

    @property
    def error(self) -> BaseException | None:
        """Why the job failed or stopped, or None."""
        return self._job.error

    @property
    def done(self) -> bool:
        """Whether the job has ended (finished, failed or cancelled)."""
        return self._job.done

    def on_progress(self, listener: Callable[[JobProgress], Any]) -> None:
        """Call ``listener(JobProgress)`` on every progress event from now on."""
        self._listeners.append(listener)

    def wait(self, timeout: float | None = None) -> Self:
        """Block until the job ends; re-raise its failure. Returns self.

        Interrupting the wait (Ctrl-C, or the notebook's Interrupt) cancels
        the job too, so nothing runs on out of reach; it says so.

        Raises
        ------
        ExplanationCancelled
            When the job was cancelled: one line (in a notebook, no traceback)
            saying at which stage, and that the statistics found are kept.
        TimeoutError
            When ``timeout`` seconds passed first; the job goes on.
        """
        job = self._job
        if not job.wait(timeout):
            raise WaitTimeout(f"the explanation is still running after {timeout} s")
        if job.status == "cancelled":
            # One line saying where it stopped and what is kept, not the job thread's traceback.
            raise ExplanationCancelled(job.stop_message, job.found) from None
        if job.error is not None:
            raise job.error
        return self

    def cancel(self) -> None:
        """Ask the job to stop at its next check (within a second or so)."""
        self._job.cancel()

    def retry(self) -> Self:
        """Run the job again, in the background, after it failed or was cancelled.

        The same data, teacher and settings (a cancelled search starts over:
        it is seeded, so it finds the same statistics again). A widget showing
        this explanation follows the new run. Returns self.

        Raises
        ------
        RuntimeError
            While the job runs, after it finished, or for an explanation
            loaded from a file (run :func:`explain` again).
        """
        if not self.done:
            raise StateError("the explanation is still running: nothing to retry")
        if self.status == "done":
            raise StateError("the explanation finished: nothing to retry")
        if self._work is None:
            raise StateError("this explanation was not started here (loaded from a file): run explain() again")
        self._start_job(in_thread=True)
        return self

    def _start_replacing(self, cell: str | None) -> None:
        """Start the job in a worker thread as the run of notebook cell ``cell`` (None: no cell known).

        The job that cell started before, if it still runs, is cancelled (a re-run replaces
        it) and given up to ``CANCEL_GRACE`` seconds to stop; a line on stderr says so. Other
        jobs still running are warned of (they share the CPU).
        """
        replaced = [e for e in running() if cell is not None and e.cell == cell]
        for old in replaced:
            # stopped before the new job starts, so the two do not share the CPU and rx.running()
            # no longer lists the replaced one
            described = repr(old)  # as it was when replaced: running, at which stage
            stopped = old._job.stop()
            print(f"cancelled the explanation this cell started before (the re-run replaces it): {described}"
                  + ("" if stopped else " (it stops at its next check, within a second or so)"),
                  file=sys.stderr, flush=True)
        self._start_job(in_thread=True, cell=cell)
        others = [e for e in running() if e is not self and e not in replaced]
        if others:
            warnings.warn(f"{len(others)} other explanation{'s' if len(others) > 1 else ''} still running: the jobs "
                          "share the CPU. rx.running() lists them; `for e in rx.running()[:-1]: e.cancel()` "
                          "stops all but this one", RuntimeWarning, stacklevel=3)

    def _start_job(self, in_thread: bool, cell: str | None = None) -> None:
        """Start a new run of the work: in a worker thread, or here (returning when it has ended).

        ``cell``: the notebook cell that starts it (see :attr:`cell`); a retry keeps the first one.
        """
        if self._work is None:
            raise StateError("this explanation has no job to run")
        if cell is not None:
            self._cell = cell
        self._result = None
        self._job = Job(self, self._listeners)
        if in_thread:
            self._job.start(self._work, self._finish)
        else:
            self._job.run(self._work, self._finish)
