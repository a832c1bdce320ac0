"""Worker threads for the search's catalog: the work split, the results merged in a fixed order.

The catalog's evaluation (thousands of statistics on one sample of users) and the binning and
standardizing of its columns spend their time in numpy kernels that release the GIL (sorts,
bincounts, fancy indexing, arithmetic over a few hundred thousand events), so threads share the
work without copying the sample. On a quiet 2-core machine (``benchmarks/bench_parallel.py``,
payments and edits at 5,000 and 100,000 users, the search's sample of 4,000), two threads ran
the catalog stage 1.76-1.88x faster than one (a process pool had gained 1.3-1.7x on evaluation
alone, for pickling the columns back), the deepening candidates
(:meth:`ColumnScreen.build_each`) 1.61-1.71x, and the scoring of a screen's columns against a
residual (:meth:`ColumnScreen.gains`) 1.21-1.54x with one BLAS thread, as the search runs
(0.83-1.07x beside BLAS's own threads). Every result is consumed in the order one worker
would have produced it, so the outcome does not depend on the number of workers, bit for bit.
A cancel check comes before each chunk of statistics (``catalog.CHUNK``) is handed out, and none is after a stop.

MCTS-SG's refinement uses the same workers where its batch of users is long (100,000 events or
more; shorter ones are scored faster in the calling thread, :meth:`StatisticsSearch._refine
<rudi_explain.search.statistics_search.StatisticsSearch>`): a polishing round's edits are scored
side by side (each reward draws its halves from its own generator seeded 0, so the scores do not
depend on one another), with a progress event before every 64 once those before are scored; the
contenders' values are evaluated side by side and their rewards taken in order in the calling
thread, since those halves come from one generator in turn.
"""

from __future__ import annotations

import os
import sys
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import AbstractContextManager
from types import TracebackType
from typing import Any, TypeVar

from threadpoolctl import ThreadpoolController

from rudi_explain.validation import check_whole

__all__ = ["DEFAULT_N_JOBS", "resolve_n_jobs", "Workers", "one_blas_thread"]

T = TypeVar("T")
R = TypeVar("R")

#: Workers used where ``n_jobs`` is None: the cores this process may run on, at most 2 (the
#: machines this runs on have 2; beyond the sample's few hundred thousand events a third thread
#: was not measured).
DEFAULT_N_JOBS = max(1, min(2, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity")
                            else (os.cpu_count() or 1)))


def resolve_n_jobs(n_jobs: int | None) -> int:
    """The number of workers ``n_jobs`` asks for: None gives :data:`DEFAULT_N_JOBS`.

    Parameters
    ----------
    n_jobs : int or None
        A whole number of workers, at least 1, or None for the default.

    Returns
    -------
    int

    Raises
    ------
    InputTypeError
        ``n_jobs`` is not a whole number (a bool, a float, a string).
    InputError
        ``n_jobs`` is below 1; the message names the value.
    """
    if n_jobs is None:
        return DEFAULT_N_JOBS
    value = check_whole(n_jobs, "n_jobs", min_value=1)
    assert value is not None, "check_whole returns a number when None is not allowed"
    return value


class Workers:
    """A pool of ``n_jobs`` threads, or the calling thread alone when ``n_jobs`` is 1.

    Use it as a context manager: on leaving, work not started yet is cancelled and the
    threads are joined (also when the caller stops early, by a cancel or an error).

    Parameters
    ----------
    n_jobs : int or None
        Workers (None: :data:`DEFAULT_N_JOBS`).
    """

    def __init__(self, n_jobs: int | None = None) -> None:
        self.n_jobs = resolve_n_jobs(n_jobs)
        self._pool = ThreadPoolExecutor(self.n_jobs, thread_name_prefix="rudi-catalog") if self.n_jobs > 1 else None

    def __enter__(self) -> Workers:
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 trace: TracebackType | None) -> None:
        self.close()

    def close(self) -> None:
        """Cancel the work not started and join the threads."""
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None

    def submit(self, fn: Callable[..., R], *args: Any) -> Future[R]:
        """Run ``fn(*args)`` on a worker; with one worker, now, in the calling thread."""
        if self._pool is not None:
            return self._pool.submit(fn, *args)
        done: Future[R] = Future()
        try:
            done.set_result(fn(*args))
        except BaseException as error:  # raised again by result(), as a pool's future does
            done.set_exception(error)
        return done

    def map_ordered(self, fn: Callable[[T], R], items: Iterable[T],
                    before: Callable[[], None] | None = None) -> Iterator[R]:
        """``fn(item)`` for each item, in the items' order, with at most ``2 * n_jobs`` running
        or waiting at once (memory stays bounded whatever the number of items).

        ``before`` is called in the calling thread before each item is handed out (a cancel
        check: it may raise to stop; what is running is then finished, the rest never starts).
        """
        pending: deque[Future[R]] = deque()
        ahead = 2 * self.n_jobs
        for item in items:
            if before is not None:
                before()
            pending.append(self.submit(fn, item))
            while len(pending) >= ahead or (pending and pending[0].done()):
                yield pending.popleft().result()
        while pending:
            yield pending.popleft().result()


_controller: tuple[int, ThreadpoolController] | None = None  # with len(sys.modules) when it looked


def one_blas_thread() -> AbstractContextManager[Any]:
    """A context manager: BLAS on one thread within it (``threadpoolctl.threadpool_limits(1, "blas")``).

    The stages whose products are small (the search's scoring, the post-processing's joint fits) run
    with one BLAS thread: a second one waking for each product cost more than it saved. Looking for
    the loaded BLAS libraries took 1.8 ms a time beside PyTorch's; they are looked for again only
    after a module was imported since (a new extension module can bring a new BLAS).
    """
    global _controller
    if _controller is None or _controller[0] != len(sys.modules):
        _controller = (len(sys.modules), ThreadpoolController())
    limiter: AbstractContextManager[Any] = _controller[1].limit(limits=1, user_api="blas")
    return limiter
