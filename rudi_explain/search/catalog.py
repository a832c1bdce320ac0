"""The short readable catalog, scored exhaustively: stage 1's first pass.

Every readable statistic of depth 1, of depth 2 with one filter or one
ordering, and every aggregation of the k largest or smallest events by a
column ("the total of the 5 largest payments", depth 3 but one phrase to a
reader) is evaluated on a sample of training users; each output is cut at
its deciles (plus one bin for users where it is undefined), so a statistic is
scored by how much of the target's variance its step function explains
(the correlation ratio, adjusted for the bins it spends). That catches a
threshold anywhere, not only a straight line.

Forward selection then takes statistics one at a time against the residual
of the additive step model of those already taken. It scores on one half of
the sample (``fit`` users) and keeps a statistic only when it explains
measurably more of the target on the other half (``check`` users), which it
was not chosen on. Of candidates that explain about as much, the simplest
wins; the best few are deepened one edit at a time (a filter added, a
``SortBy``/``Top`` pair inserted, another aggregation) while that explains
measurably more, and a deeper edit only when it explains clearly more (not
within the 5% by which the simpler wins). Once selection stops, each kept
statistic is edited once more against what the others leave unexplained,
and then replaced by a simpler form of it (:func:`simpler_forms`: an operator
dropped, a plainer aggregation) unless it explains measurably more on the
checking users: a deeper variant that won on the choosing half by luck (one of
thousands of filters) or as a blend of two planted statistics does not keep
that edge there.
"""

from __future__ import annotations

import hashlib
import threading
from collections import deque
from collections.abc import Callable, Iterable
from concurrent.futures import Future
from dataclasses import dataclass, field
from functools import partial
from typing import Any, cast

import numpy as np

from rudi_explain.data.sequences import Sequences
from rudi_explain.exceptions import InputError
from rudi_explain.search.columns import N_BINS, binned_and_standardized
from rudi_explain.search.parallel import Workers, resolve_n_jobs
from rudi_explain.statistics import (
    OPERATORS,
    Aggregation,
    Count,
    FilterBy,
    GroupBy,
    Max,
    Mean,
    Min,
    Percentile,
    Pipeline,
    RetainBy,
    Schema,
    Select,
    SortBy,
    Statistic,
    Sum,
    Top,
    candidate_operators,
    next_operators,
)
from rudi_explain.statistics.frame import FrameCache
from rudi_explain.statistics.operators import ANY_COLUMN, Operator

__all__ = ["short_catalog", "single_aggregations", "ranked_statistics", "complexity", "StepModel", "ColumnScreen",
           "neighbours", "simpler_forms", "distinct_statistics", "scalar_form"]

#: Aggregations that keep a filtered depth-2 statistic in the catalog: what an
#: analyst computes first (the rest are reached by deepening).
_CORE = frozenset({"Sum", "Mean", "Max", "Min", "Count"})
_BLOCK = 512  # columns binned and standardized at a time
_GAIN_BLOCK = 1024  # columns scored at a time
#: Bytes of bin indices, and of lines (values as float64), a screen keeps on one set of rows (the catalog is
#: scored on the same rows at every step). Gathering the lines was 70% of a block's scoring (edits' 1,991
#: columns: 31 MB); kept without a limit, on every set of rows, they took the peak 167 MB higher.
_GATHER_BYTES = 64 * 2**20
#: Statistics handed out to the workers at a time, each chunk after a cancel check. Two chunks are in flight
#: (the one before is taken up while the next is evaluated), so a check comes at least every 64 statistics.
CHUNK = 32
_EACH_PIECE, _EACH_COLUMNS = 8, 128  # build_each: statistics per task, binned in blocks of up to 128 columns
_TOP5 = Top(5)  # the Top of every inserted SortBy | Top pair (built once: its check is not free)


def complexity(stat: Statistic) -> tuple[int, int, str]:
    """Sort key of simplicity: depth, then how plain the aggregation is, then the text."""
    agg = stat.aggregation
    if agg.ignores_selection:
        rank = 0  # how many: no column to name, what an analyst computes first
    elif agg.name == "Sum":
        # How much in total (or how many of a category). Ranked after the plain count:
        # where "the number of payments in the last 30 days" and "their total amount"
        # explain about as much (amounts that vary little), the count is the plainer story.
        rank = 1
    elif agg.name in _CORE:
        rank = 2  # average or share, largest, smallest
    elif agg.name == "First" or (isinstance(agg, Percentile) and float(agg.k) == 50):
        rank = 3
    else:
        rank = 4
    rank += sum(1 for op in stat.row_operators if op.name == "Abs")
    return stat.depth, rank, str(stat)


def _event_shares(seqs: Sequences) -> dict[str, np.ndarray]:
    """Share of events in each category of each categorical column."""
    out = {}
    for column, vocab in seqs.vocabularies.items():
        codes = seqs.codes[column]
        counts = np.bincount(codes[codes >= 0], minlength=len(vocab))[: len(vocab)]
        out[column] = counts / max(len(codes), 1)
    return out


def short_catalog(seqs: Sequences, grammar: str = "readable", max_depth: int = 2,
                  min_share: float = 0.005) -> list[Statistic]:
    """Every short statistic worth screening, simplest first.

    Depth 1: every valid statistic of the grammar. Depth 2: one filter
    (``RetainBy``/``FilterBy`` on a category holding at least ``min_share`` and
    at most ``1 - min_share`` of the events, since a rarer or commoner one
    barely changes a value) with a core aggregation (count, sum, mean or
    share, max, min), or one other row operator (``Top``, ``Abs``, a time
    window, ``SortBy`` then ``First``) with any aggregation. ``GroupBy`` is
    left out: each of its outputs is a ``RetainBy`` statistic already here.
    With ``max_depth >= 3``, also every aggregation of the k largest or
    smallest events by a column (:func:`ranked_statistics`).
    """
    schema = Schema.of(seqs)
    shares = _event_shares(seqs)
    out: dict[tuple, Statistic] = {}

    def usable(op: Operator) -> bool:
        if isinstance(op, (RetainBy, FilterBy)):
            vocab = schema.vocabularies[op.column]
            share = shares[op.column][vocab.index(op.value)]
            return min_share <= share <= 1 - min_share
        return not isinstance(op, GroupBy)

    def walk(pipeline: Pipeline) -> None:
        if pipeline.complete:
            stat = pipeline.statistic()
            if any(isinstance(op, (RetainBy, FilterBy)) for op in stat.row_operators) \
                    and not (stat.aggregation.name in _CORE or stat.aggregation.ignores_selection):
                return
            out.setdefault(stat.key, stat)
            return
        for op in next_operators(pipeline, schema, min(max_depth, 2), grammar):
            if usable(op):
                walk(pipeline.then(op, schema))

    walk(Pipeline((), schema=schema))
    if max_depth >= 3:
        for stat in ranked_statistics(schema, grammar):
            out.setdefault(stat.key, stat)
    return sorted(out.values(), key=complexity)


#: Aggregations over the k largest or smallest events, by the kind of the selection:
#: "total / average / largest / smallest amount of the 5 largest payments", and for a
#: category "how many / what share of the 5 largest payments were by card".
_RANKED_AGGREGATIONS = {"numerical": (Sum, Mean, Max, Min), "categorical": (Sum, Mean)}


def single_aggregations(schema: Schema, grammar: str = "paper") -> list[Statistic]:
    """Every single aggregation of every column: ``Select(c) | Agg``, one Count.

    This is the flat per-user table the paper feeds its LightGBM teacher and
    its Lasso / LightGBM selection baselines; with ``grammar="readable"``
    only its readable members (no standard deviation of a 0/1 indicator).
    """
    aggregations = [op for cls in OPERATORS.values() if issubclass(cls, Aggregation)
                    for op in cls.candidates(schema)]
    out: list[Statistic] = []
    seen: set[tuple] = set()
    for column in list(schema.numerical) + list(schema.vocabularies):
        for agg in aggregations:
            stat = Statistic((Select(column), agg))
            if agg.ignores_selection:
                stat = Statistic((Select(ANY_COLUMN), agg))
            if stat.key not in seen and stat.is_valid(schema) and (grammar == "paper" or stat.is_readable(schema)):
                seen.add(stat.key)
                out.append(stat)
    return out


def ranked_statistics(schema: Schema, grammar: str = "readable") -> list[Statistic]:
    """Every ``Select(x) | SortBy(s, asc|desc) | Top(5) | agg``: one phrase to an analyst.

    "The total of the 5 largest payments", "the average duration of the 5
    longest sessions", "how many of the 5 largest payments were online": the
    sort column ``s`` is any numerical column, ``x`` any column, ``agg`` a sum,
    mean, max or min for a number (sum or mean for a category). It is depth 3
    in the grammar but read as one concept, so the catalog screens it whole;
    one deepening edit (a filter before it) then reaches depth 4.
    """
    out = []
    for sort, top in ((s, t) for s in SortBy.candidates(schema) for t in Top.candidates(schema)):
        for column in list(schema.numerical) + list(schema.vocabularies):
            kind = "numerical" if column in schema.numerical else "categorical"
            for agg in _RANKED_AGGREGATIONS[kind]:
                try:
                    stat = Statistic((Select(column), sort, top, agg()))
                except ValueError:
                    continue
                if stat.is_valid(schema) and (grammar != "readable" or stat.is_readable(schema)):
                    out.append(stat)
    return out


def neighbours(stat: Statistic, schema: Schema, max_depth: int, grammar: str = "readable",
               deeper_only: bool = False) -> list[Statistic]:
    """Valid statistics one edit away: an argument changed, a row operator added
    or dropped, or a ``SortBy(s) | Top(5)`` pair inserted (as one edit, since a
    ``SortBy`` alone changes nothing), keeping the aggregation or with a sum or mean instead."""
    ops = list(stat.operators)
    candidates = candidate_operators(schema)
    rows = [op for op in candidates if op.kind == "row" and not isinstance(op, (SortBy, Top))]
    pairs = [[op, _TOP5] for op in candidates if isinstance(op, SortBy)] + [[_TOP5]]
    variants: list[list[Operator]] = []
    if stat.aggregation.ignores_selection:  # "number of X" -> "total / average / largest amount of X"
        for column in schema.numerical:
            variants.extend([Select(column), *ops[1:-1], agg] for agg in (Sum(), Mean(), Max()))
    elif stat.selected in schema.numerical:
        variants.append([Select("*"), *ops[1:-1], Count()])
    if not deeper_only:
        for i, op in enumerate(ops):
            for other in candidates:
                if other.kind == op.kind and other != op and not isinstance(other, Select):
                    variants.append(ops[:i] + [other] + ops[i + 1:])
            if op.kind == "row":
                variants.append(ops[:i] + ops[i + 1:])
    end = len(ops) - (2 if stat.group is not None else 1)
    for i in range(1, end + 1):
        if stat.depth + 1 <= max_depth:
            variants.extend(ops[:i] + [op] + ops[i:] for op in rows)
        if stat.depth + 2 <= max_depth:
            variants.extend(ops[:i] + pair + ops[i:] for pair in pairs if len(pair) == 2)
            # "The largest X" -> "the total of the 5 largest X": the pair with another
            # aggregation is one step for a reader, though two edits of the pipeline.
            variants.extend(ops[:i] + pair + ops[i:-1] + [agg()] for pair in pairs if len(pair) == 2
                            for agg in (Sum, Mean) if agg.name != stat.aggregation.name)
        if stat.depth + 1 <= max_depth:
            variants.append(ops[:i] + [_TOP5] + ops[i:])
    out, keys = [], {stat.key}
    readable = grammar == "readable"
    for variant in variants:
        try:
            candidate = Statistic(variant)
        except ValueError:
            continue
        if candidate.depth > max_depth:
            continue
        # A readable pipeline is a valid one (the readable check folds the validity checks too).
        if not (candidate.is_readable(schema) if readable else candidate.is_valid(schema)):
            continue
        if candidate.key in keys:
            continue
        keys.add(candidate.key)
        out.append(candidate)
    return sorted(out, key=complexity)


def simpler_forms(stat: Statistic, schema: Schema, grammar: str = "readable") -> list[Statistic]:
    """Valid statistics one edit simpler than ``stat``, simplest first.

    One row operator dropped, a ``SortBy | Top`` pair dropped together (a
    ``SortBy`` alone changes nothing), or a plainer aggregation in the same
    place: whatever :func:`complexity` ranks strictly simpler by depth or
    aggregation (not by the text alone). "The largest amount" is a simpler
    form of "the largest amount outside region 27" and of "the median
    amount"; "the number of payments" is a simpler form of "the total
    amount", not the other way round.
    """
    ops = list(stat.operators)
    variants: list[list[Operator]] = []
    for i, op in enumerate(ops):
        if op.kind == "row":
            variants.append(ops[:i] + ops[i + 1:])
            if isinstance(op, SortBy):
                variants.extend(ops[:i] + ops[i + 1:j] + ops[j + 1:] for j in range(i + 1, len(ops))
                                if isinstance(ops[j], Top))
    variants.extend(ops[:-1] + [other] for other in candidate_operators(schema)
                    if other.kind == "aggregation" and other != stat.aggregation)
    if stat.selected in schema.numerical and not any(isinstance(op, (SortBy, Top)) for op in ops):
        # "The total amount of X" -> "the number of X" (after a Top(k), a count is only min(n, k)).
        variants.append([Select("*"), *ops[1:-1], Count()])
    level = complexity(stat)[:2]

    def keep(candidate: Statistic) -> bool:
        # A readable pipeline is a valid one (the readable check folds the validity checks too).
        return (candidate.is_readable(schema) if grammar == "readable" else candidate.is_valid(schema)) \
            and complexity(candidate)[:2] < level

    return sorted(distinct_statistics(variants, keep, exclude={stat.key}), key=complexity)


def distinct_statistics(variants: Iterable[list], keep: Callable[[Statistic], bool],
                        exclude: Iterable[Any] = ()) -> list[Statistic]:
    """The operator lists that make a statistic ``keep`` accepts, each equivalence key once.

    Lists that are no statistic (``Statistic`` refuses them) and keys in
    ``exclude`` are skipped; the order of ``variants`` is kept.
    """
    out, keys = [], set(exclude)
    for variant in variants:
        try:
            candidate = Statistic(variant)
        except ValueError:
            continue
        if candidate.key in keys or not keep(candidate):
            continue
        keys.add(candidate.key)
        out.append(candidate)
    return out


class StepModel:
    """An additive model of step functions and straight lines: least squares on the
    decile-bin indicators and the standardized values of some columns.

    The steps catch a threshold anywhere; the line keeps a heavy-tailed value
    whose top decile spans most of its range (a total amount) from looking
    worse than a coarse count.
    """

    def __init__(self, bins: np.ndarray, values: np.ndarray, y: np.ndarray) -> None:
        self.mean = float(y.mean())
        self.levels = [np.unique(bins[:, j]) for j in range(bins.shape[1])]
        # The straight lines hold over the values they were fitted on, and no further: on a
        # heavy-tailed total, a user far beyond the fitted ones would get an unbounded
        # prediction (a held-out R^2 of -1.9 was seen), so one extreme user would judge a
        # statistic. Beyond the fitted range the line stays flat.
        values = values.reshape(len(bins), -1)
        self.low = values.min(axis=0) if len(values) else np.zeros(values.shape[1])
        self.high = values.max(axis=0) if len(values) else np.zeros(values.shape[1])
        D = self._design(bins, values)
        self.centre = D.mean(axis=0)
        D = D - self.centre
        # Normal equations with a whisper of ridge: indicator columns can be collinear
        # (a bin of one column equal to a bin of another), and this is fast.
        gram = D.T @ D
        gram[np.diag_indices_from(gram)] += 1e-6 * len(D)
        self.coef = np.linalg.solve(gram, D.T @ (y - self.mean)) if D.shape[1] else np.zeros(0)

    def _design(self, bins: np.ndarray, values: np.ndarray) -> np.ndarray:
        # One indicator per bin but the first of each column (the intercept carries it).
        cols = [(bins[:, j][:, None] == lv[None, 1:]) for j, lv in enumerate(self.levels)]
        cols.append(values.reshape(len(bins), -1))
        return np.hstack(cols).astype(np.float64)

    def predict(self, bins: np.ndarray, values: np.ndarray) -> np.ndarray:
        D = self._design(bins, np.clip(values.reshape(len(bins), -1), self.low, self.high))
        return self.mean + (D - self.centre) @ self.coef if D.shape[1] else np.full(len(bins), self.mean)


@dataclass
class ColumnScreen:
    """Outputs of many statistics on a sample of users, binned, for scoring against a residual.

    Attributes
    ----------
    owners : list of (Statistic, int)
        For each column, the statistic and which of its outputs it is.
    bins : ndarray of uint8, shape (n, m)
    """

    owners: list[tuple[Statistic, int]]
    bins: np.ndarray
    #: Standardized values, as they are and clipped (float32, shape (n, m, 2); undefined =
    #: 0, the mean), for the straight-line part.
    values: np.ndarray
    #: What :meth:`gains` needs of the columns on some rows whatever the residual, by the rows.
    _on_rows: dict[bytes, list[tuple[Any, ...]]] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def build(cls, stats: Iterable[Statistic], sample: Sequences,
              seen: set[bytes] | None = None, cancel: Callable[[], None] | None = None,
              max_columns: int | None = None, target: np.ndarray | None = None,
              rows: np.ndarray | None = None, frames: FrameCache | None = None,
              n_jobs: int | None = None, shadowed: set[Statistic] | None = None) -> ColumnScreen:
        """Evaluate ``stats`` on every user of ``sample`` and keep the columns that vary and are new.

        A column equal to one already kept (``seen``: digests of earlier
        columns) is dropped, so of equal-valued statistics the first (the
        simplest, when ``stats`` comes simplest first) stays. Columns are
        binned and standardized block by block, so memory holds about 9 bytes
        per user and column kept (uint8 bins, two float32 lines) and never the
        whole float64 catalog.

        Parameters
        ----------
        max_columns : int or None
            At most this many columns are kept. Beyond it, the columns that
            explain the most of ``target`` alone on ``rows`` stay (screening by
            marginal fit; ties to the earlier, simpler column), since a catalog
            of six columns with 30 categories each can hold 140,000 outputs.
        target, rows : ndarray
            What ``max_columns`` ranks by: the target over the sample's users,
            and the rows it is fitted on. Needed only with ``max_columns``.
        frames : FrameCache, optional
            Frames over ``sample`` shared by statistics with the same row operators (the
            same values; each filter applied once).
        n_jobs : int or None
            Worker threads evaluating the statistics and binning the columns (None: 2 where
            the process may run on 2 cores or more, see :mod:`rudi_explain.search.parallel`).
            The screen is the same, bit for bit, with any number.
        shadowed : set of Statistic, optional
            Filled with the statistics that lost a varying output as equal to another
            statistic's column (in ``seen`` before, or kept earlier in this build): the
            columns of every other statistic are those ``build([s], sample, set())`` gives
            (its varying outputs, in order), unless ``max_columns`` trimmed some.
        """
        if max_columns is not None and target is None:
            raise InputError("ColumnScreen.build: max_columns needs the target to rank columns by")
        workers_asked = resolve_n_jobs(n_jobs)  # refused here, whatever the size of the catalog
        seen = set() if seen is None else seen
        n = sample.n_users
        if max_columns is not None and rows is None:
            rows = np.arange(n)
        total_var = float(target[rows].var()) or 1.0 if target is not None else 1.0
        centred = target[rows] - target[rows].mean() if target is not None else None
        kept: list[ColumnScreen] = []  # finished blocks
        # With max_columns: each kept column's gain on the target, by block; scored only once a trim
        # is due (most catalogs never reach the limit), each block as it was closed.
        merit: list[np.ndarray | None] = []
        owners: list[tuple[Statistic, int]] = []
        columns: list[np.ndarray] = []
        held = 0
        stats = list(stats)
        chunks = [stats[start:start + CHUNK] for start in range(0, len(stats), CHUNK)]
        closing: deque[Future[ColumnScreen]] = deque()  # blocks being binned
        first_owner: dict[bytes, Statistic] = {}  # with shadowed: the statistic each new column came from

        def trim(workers: Workers) -> int:
            assert max_columns is not None and centred is not None and rows is not None, "a trim needs its target"
            unscored = [b for b, gains in enumerate(merit) if gains is None]
            score = partial(_merit, centred=centred, rows=rows, total_var=total_var)
            for b, gains in zip(unscored, workers.map_ordered(score, [kept[b] for b in unscored])):
                merit[b] = gains
            return _trim(kept, cast("list[np.ndarray]", merit), max_columns)

        def finish_block(block: ColumnScreen, workers: Workers) -> None:
            nonlocal held
            kept.append(block)
            merit.append(None)
            held += len(block)
            if max_columns is not None and held > max_columns + max_columns // 2:  # now and then, not every block
                held = trim(workers)

        # One worker gives the order of a plain loop; more share each chunk of statistics and
        # bin blocks of columns meanwhile, and everything is taken up in that same order: which
        # column is kept as new, the blocks and the trims do not depend on the number of workers.
        with Workers(workers_asked if len(chunks) > 1 else 1) as workers:
            def close_block() -> None:
                nonlocal owners, columns
                if columns:
                    closing.append(workers.submit(_close_block, owners, columns))
                owners, columns = [], []

            def take_closed(wait: bool) -> None:
                while closing and (wait or closing[0].done() or len(closing) > workers.n_jobs):
                    finish_block(closing.popleft().result(), workers)

            def take_part(part: Future[list[tuple[Statistic, int, np.ndarray, bytes]]]) -> None:
                for stat, j, v, sig in part.result():
                    if sig in seen:
                        if shadowed is not None and first_owner.get(sig) is not stat:
                            shadowed.add(stat)
                        continue
                    seen.add(sig)
                    if shadowed is not None:
                        first_owner[sig] = stat
                    owners.append((stat, j))
                    columns.append(v)
                    if len(columns) == _BLOCK:
                        close_block()

            stop = threading.Event()  # set on a cancel: the pieces handed out evaluate nothing more
            evaluate = partial(_evaluate_chunk, sample=sample, frames=frames, stop=stop)
            piece = -(-CHUNK // (3 * workers.n_jobs))  # a few pieces per worker: they end about together
            parts: deque[Future[list[tuple[Statistic, int, np.ndarray, bytes]]]] = deque()
            for chunk in chunks:
                # The cancel check comes before a chunk is handed out: a check every CHUNK statistics. The
                # chunk before it is taken up meanwhile, so no worker waits for the last piece of a chunk;
                # nothing is handed out after a stop.
                if cancel is not None:
                    try:
                        cancel()
                    except BaseException:
                        stop.set()
                        raise
                ahead = len(parts)
                parts.extend(workers.submit(evaluate, chunk[i:i + piece]) for i in range(0, len(chunk), piece))
                for _ in range(ahead):
                    take_part(parts.popleft())
                take_closed(wait=False)
            while parts:
                take_part(parts.popleft())
            close_block()
            take_closed(wait=True)
            if max_columns is not None and held > max_columns:
                trim(workers)
        return _concatenate(kept, n)

    @classmethod
    def build_each(cls, stats: list[Statistic], sample: Sequences, frames: FrameCache | None = None,
                   n_jobs: int | None = None) -> list[ColumnScreen]:
        """One screen per statistic, as ``[build([s], sample, set(), frames=frames) for s in stats]``
        (each statistic's varying outputs, none dropped as seen by another), built on ``n_jobs``
        worker threads: the deepening candidates of forward selection, scored side by side."""
        workers_asked = resolve_n_jobs(n_jobs)
        # A few statistics per task, binned as one block (one block per statistic was mostly fixed
        # costs); pieces of a fixed size: the same screens with any number of workers.
        pieces = [stats[i:i + _EACH_PIECE] for i in range(0, len(stats), _EACH_PIECE)]
        several = partial(_build_several, sample=sample, frames=frames)
        with Workers(workers_asked if len(pieces) > 1 else 1) as workers:
            return [screen for piece in workers.map_ordered(several, pieces) for screen in piece]

    @classmethod
    def join(cls, screens: list[ColumnScreen], n: int) -> ColumnScreen:
        """The columns of several screens side by side (an empty one adds nothing: the others are not copied)."""
        screens = [sc for sc in screens if len(sc)]
        if not screens:
            return cls([], np.zeros((n, 0), np.uint8), np.zeros((n, 0, 2), np.float32))
        if len(screens) == 1:
            return screens[0]
        return cls([o for sc in screens for o in sc.owners], np.hstack([sc.bins for sc in screens]),
                   np.hstack([sc.values for sc in screens]))

    def __len__(self) -> int:
        return len(self.owners)

    def take(self, i: int) -> ColumnScreen:
        """Column ``i`` alone."""
        return ColumnScreen([self.owners[i]], self.bins[:, i:i + 1], self.values[:, i:i + 1])

    def gains(self, residual: np.ndarray, rows: np.ndarray, total_var: float,
              n_jobs: int | None = None, within: tuple[np.ndarray, np.ndarray] | None = None) -> np.ndarray:
        """Share of the target's variance each column's step function explains of
        ``residual`` on ``rows``, adjusted for the bins it spends (can be < 0).

        Blocks of 1,024 columns are scored on ``n_jobs`` worker threads (None: see
        :mod:`rudi_explain.search.parallel`), each block as one worker would: the same gains,
        bit for bit, with any number. Two pay with one BLAS thread, as the search runs
        (1.2-1.8x on a quiet 2-core machine), and not beside BLAS's own threads (0.8-1.1x).
        ``within=(outer, mask)``, ``rows`` being ``outer[mask]``: the parts kept on ``outer`` are taken
        from (the same arrays: the same gains), not gathered again.
        """
        workers_asked = resolve_n_jobs(n_jobs)
        m = len(self.owners)
        if m == 0:
            return np.zeros(0)
        r = residual - residual.mean()
        ss = float(r @ r)
        if ss <= 0:
            return np.zeros(m)
        out = np.empty(m)
        starts = range(0, m, _GAIN_BLOCK)
        with Workers(workers_asked if len(starts) > 1 else 1) as workers:
            parts = self._parts_on(rows, workers, within)
            score = partial(self._block_gains, r=r, rows=rows, ss=ss)
            for start, block_gains in zip(starts, workers.map_ordered(score, list(zip(starts, parts)))):
                out[start:start + len(block_gains)] = block_gains
        return out * ss / len(rows) / total_var

    def _block_gains(self, block: tuple[int, tuple[np.ndarray, ...]], r: np.ndarray, rows: np.ndarray,
                     ss: float) -> np.ndarray:
        """:meth:`gains` of the columns from ``start`` on, before the scaling: ``block`` is
        ``(start, parts)`` with the block's :meth:`_parts_on`."""
        start, (counts, df, mean, squares, idx, lines) = block
        n, k, width = len(rows), len(df), N_BINS  # undefined values share the lowest bin
        total = r.sum()  # 0 but for rounding: r @ (x - mean) is r @ x - mean * total
        if idx is None:  # beyond the bytes kept on these rows: gathered again
            idx = _bin_index(self.bins[rows, start:start + k])
        sums = np.bincount(idx, weights=np.repeat(r, k), minlength=k * width).reshape(k, width)
        with np.errstate(invalid="ignore", divide="ignore"):
            between = np.where(counts > 0, sums * sums / np.maximum(counts, 1), 0.0).sum(axis=1)
        eta2 = between / ss
        stepped = 1.0 - (1.0 - eta2) * (n - 1) / np.maximum(n - df - 1, 1)
        # Both lines (as it is, and clipped) in one product; the better line counts.
        x = lines if lines is not None else self.values[rows, start:start + k].astype(np.float64)
        along = (r @ x.reshape(n, 2 * k)).reshape(k, 2) - mean * total
        with np.errstate(invalid="ignore", divide="ignore"):  # a line constant on the rows explains nothing
            r2 = np.where(squares > 0, np.nan_to_num(along * along / (ss * squares)), 0.0).max(axis=1)
        r2 = np.maximum(r2, 0.0)
        straight = 1.0 - (1.0 - r2) * (n - 1) / max(n - 2, 1)
        return np.maximum(stepped, straight)

    def _parts_on(self, rows: np.ndarray, workers: Workers | None = None,
                  within: tuple[np.ndarray, np.ndarray] | None = None) -> list[tuple[Any, ...]]:
        """Per block of columns, what :meth:`gains` uses on ``rows`` whatever the residual:
        users per bin, bins used less one, and each line's mean and sum of squared deviations
        (cached: forward selection scores the same catalog on the same rows at every step).
        The first blocks also keep their bin indices and lines on ``rows`` (up to :data:`_GATHER_BYTES` each),
        which every scoring would otherwise gather and widen again (the same arrays: the same gains); the
        parts are ``(counts, df, mean, squares, idx, lines)``, ``idx`` and ``lines`` None beyond the budget."""
        key = _rows_key(rows)
        if key in self._on_rows:
            return self._on_rows[key]
        outer = None if within is None else self._on_rows.get(_rows_key(within[0]))
        if within is not None and outer is not None and all(p[4] is not None and p[5] is not None for p in outer):
            # rows within rows whose gathered arrays are kept (the selection's strata): taken from those
            make: Callable[[Any], tuple[Any, ...]] = partial(_block_parts_within, n=len(within[0]), part=within[1])
            parts = list(map(make, outer) if workers is None else workers.map_ordered(make, outer))
        else:
            make = partial(self._block_parts, rows=rows)
            starts = range(0, len(self.owners), _GAIN_BLOCK)
            parts = list(map(make, starts) if workers is None else workers.map_ordered(make, starts))
        held = np.cumsum([[p[4].nbytes, p[5].nbytes] for p in parts], axis=0) <= _GATHER_BYTES
        for b, (counts, df, mean, squares, idx, lines) in enumerate(parts):
            parts[b] = (counts, df, mean, squares, idx if held[b, 0] else None, lines if held[b, 1] else None)
        self._on_rows[key] = parts
        return parts

    def _block_parts(self, start: int, rows: np.ndarray) -> tuple[Any, ...]:
        """:meth:`_parts_on` of the block of columns from ``start`` on."""
        k = min(_GAIN_BLOCK, len(self.owners) - start)
        return _block_parts_of(_bin_index(self.bins[rows, start:start + k]),
                               self.values[rows, start:start + k].astype(np.float64))  # (n, k, 2)


def _block_parts_of(idx: np.ndarray, x: np.ndarray) -> tuple[Any, ...]:
    """A block's parts (:meth:`ColumnScreen._parts_on`) from its bin indices and lines on the rows."""
    k = x.shape[1]
    counts = np.bincount(idx, minlength=k * N_BINS).reshape(k, N_BINS)
    mean = x.mean(axis=0)
    centred = x - mean
    return counts, (counts > 0).sum(axis=1) - 1, mean, (centred * centred).sum(axis=0), idx, x


def _block_parts_within(outer: tuple[Any, ...], n: int, part: np.ndarray) -> tuple[Any, ...]:
    """A block's parts on the rows ``part`` picks of the ``n`` rows whose parts ``outer`` are, with their
    bin indices and lines kept (rows of those: the same arrays as gathered afresh)."""
    return _block_parts_of(outer[4].reshape(n, -1)[part].ravel(), outer[5][part])


def _rows_key(rows: np.ndarray) -> bytes:
    return hashlib.blake2b(np.ascontiguousarray(rows).tobytes(), digest_size=16).digest()


def _bin_index(bins: np.ndarray) -> np.ndarray:
    """Each (row, column) bin of ``bins`` (uint8, (n, k)) as one index into k * N_BINS counts, row-major."""
    k = bins.shape[1]
    return (bins.astype(np.int64) + (np.arange(k) * N_BINS)[None, :]).ravel()


def _trim(blocks: list[ColumnScreen], merit: list[np.ndarray], max_columns: int) -> int:
    """Keep, in place, the ``max_columns`` columns of ``blocks`` with the largest ``merit``
    (ties to the earlier column), in their order; the number kept."""
    gains = np.concatenate(merit)
    order = np.lexsort((np.arange(len(gains)), -np.round(gains, 6)))
    keep = np.zeros(len(gains), dtype=bool)
    keep[order[:max_columns]] = True
    start = 0
    for b, block in enumerate(blocks):
        mask = keep[start:start + len(block)]
        start += len(block)
        cols = np.flatnonzero(mask)
        blocks[b] = ColumnScreen([block.owners[c] for c in cols], block.bins[:, cols], block.values[:, cols])
        merit[b] = merit[b][cols]
    return int(keep.sum())


def _concatenate(blocks: list[ColumnScreen], n: int) -> ColumnScreen:
    """One screen of ``blocks``, emptying the list as it copies: the peak is the result and one block, not twice
    the catalog. One block is the screen as it is (a deepening candidate's, built for it alone: no one else's)."""
    if len(blocks) == 1 and blocks[0].bins.flags.c_contiguous and blocks[0].values.flags.c_contiguous:
        return blocks.pop()
    m = sum(len(b) for b in blocks)
    bins = np.empty((n, m), dtype=np.uint8)
    values = np.empty((n, m, 2), dtype=np.float32)
    owners: list[tuple[Statistic, int]] = []
    start = 0
    blocks.reverse()
    while blocks:
        block = blocks.pop()
        bins[:, start:start + len(block)] = block.bins
        values[:, start:start + len(block)] = block.values
        owners.extend(block.owners)
        start += len(block)
    return ColumnScreen(owners, bins, values)


def _build_several(stats: list[Statistic], sample: Sequences, frames: FrameCache | None) -> list[ColumnScreen]:
    """``[ColumnScreen.build([s], sample, set(), frames=frames) for s in stats]``, the columns of all
    binned and standardized together (column by column: the same values as block by block)."""
    n = sample.n_users
    spans: list[tuple[list[tuple[Statistic, int]], int, int]] = []  # each statistic's owners and columns
    columns: list[np.ndarray] = []
    for stat in stats:
        seen: set[bytes] = set()  # a statistic's own outputs only, as build([stat], sample, set()) drops
        owners = []
        start = len(columns)
        for _, j, v, sig in _evaluate_chunk([stat], sample, frames):
            if sig not in seen:
                seen.add(sig)
                owners.append((stat, j))
                columns.append(v)
        spans.append((owners, start, len(columns)))
    # Blocks of whole statistics, at most _EACH_COLUMNS columns (a wider statistic alone, as built alone).
    out: list[ColumnScreen] = []
    group: list[tuple[list[tuple[Statistic, int]], int, int]] = []
    for i, span in enumerate(spans):
        group.append(span)
        width = group[-1][2] - group[0][1]
        following = spans[i + 1][2] - spans[i + 1][1] if i + 1 < len(spans) else None
        if following is None or width + following > _EACH_COLUMNS or width > _EACH_COLUMNS:
            out.extend(_screens_of(group, columns, n))
            group = []
    return out


def _screens_of(spans: list[tuple[list[tuple[Statistic, int]], int, int]], columns: list[np.ndarray],
                n: int) -> list[ColumnScreen]:
    """The screens of consecutive statistics (owners, first and end column in ``columns``), binned as one block."""
    first, end = spans[0][1], spans[-1][2]
    if first == end:
        return [_concatenate([], n) for _ in spans]
    lone = np.zeros(end - first, dtype=bool)
    for _, a, b in spans:
        if b - a == 1:
            lone[a - first] = True
    bins, values = binned_and_standardized(np.column_stack(columns[first:end]), lone=lone)
    return [ColumnScreen(owners, np.ascontiguousarray(bins[:, a - first:b - first]),
                         np.ascontiguousarray(values[:, a - first:b - first])) for owners, a, b in spans]


def _evaluate_chunk(stats: list[Statistic], sample: Sequences, frames: FrameCache | None,
                    stop: threading.Event | None = None) -> list[tuple[Statistic, int, np.ndarray, bytes]]:
    """Each output of ``stats`` on ``sample`` that varies, with a digest of its values, in order (cut short
    once ``stop`` is set: the caller has stopped and reads none of it)."""
    n = sample.n_users
    out = []
    for stat in stats:
        if stop is not None and stop.is_set():
            break
        values = stat.evaluate(sample, frames=frames).reshape(n, -1)
        # All outputs of a statistic at once (a vector statistic has dozens): which vary, and
        # their values as the digest reads them, column by column (transposed first, so that every
        # pass runs along contiguous rows: a sum down the columns of a narrow array was 20 times slower).
        keyed = values.T.copy()
        finite = np.isfinite(keyed)
        defined = np.count_nonzero(finite, axis=1)
        whole = bool(defined.sum() == finite.size)  # every value defined (counts, sums): no masks
        if not whole:
            keyed[~finite] = np.inf
        with np.errstate(invalid="ignore"):
            low = keyed.min(axis=1)
            high = (keyed if whole else np.where(finite, keyed, -np.inf)).max(axis=1)
        varies = np.flatnonzero((defined >= 2) & ~((low == high) & (defined == n)))
        if not len(varies):
            continue
        keyed = keyed.take(varies, axis=0) if len(varies) < len(keyed) else keyed  # those that vary only
        np.round(keyed, 9, out=keyed)
        for i, j in enumerate(varies):
            # A digest, not the bytes: 140,000 columns of 4,000 users held 4.5 GB of keys. SHA-1 hashed
            # them twice as fast as BLAKE2b here; it only tells equal columns apart, as any digest would.
            sig = hashlib.sha1(keyed[i].tobytes(), usedforsecurity=False).digest()[:16]
            out.append((stat, int(j), values[:, j], sig))
    return out


def _close_block(owners: list[tuple[Statistic, int]], columns: list[np.ndarray]) -> ColumnScreen:
    """One block of columns binned and standardized."""
    X = np.column_stack(columns)
    return ColumnScreen(owners, *binned_and_standardized(X))


def _merit(block: ColumnScreen, centred: np.ndarray, rows: np.ndarray, total_var: float) -> np.ndarray:
    """Each column's gain on ``centred`` (the target on ``rows``): what a column limit ranks by."""
    return block.gains(centred, rows, total_var, n_jobs=1)  # a worker already


def scalar_form(stat: Statistic, output: int, schema: Schema, grammar: str = "readable") -> tuple[Statistic, int]:
    """The simplest statistic with the same values as one output of ``stat``.

    A count of one category (``Select(c) | Sum``, output ``c=v``) reads as
    ``Select(*) | RetainBy(c=v) | Count``; one output of a ``GroupBy(g)`` as
    the statistic with ``RetainBy(g=w)`` instead. Returns ``(statistic,
    output)``, unchanged where no such form is valid (in ``grammar``).
    """
    group = stat.group
    one_hot = stat.is_vector(schema) and schema.kind(stat.selected) == "categorical" \
        and not stat.aggregation.ignores_selection
    q = len(schema.vocabularies[group]) if group is not None else 1
    category_index, group_index = divmod(output, q)
    rows = list(stat.operators[1:-2] if group is not None else stat.operators[1:-1])
    extra = [RetainBy(group, schema.vocabularies[group][group_index])] if group is not None else []
    if one_hot and stat.aggregation.name == "Sum":
        value = schema.vocabularies[stat.selected][category_index]
        ops = [Select("*"), *rows, RetainBy(stat.selected, value), *extra, Count()]
        new_output = 0
    elif group is not None:
        ops = [stat.operators[0], *rows, *extra, stat.aggregation]
        new_output = category_index if one_hot else 0
    else:
        return stat, output
    try:
        candidate = Statistic(ops)
    except ValueError:
        return stat, output
    if not candidate.is_valid(schema) or (grammar == "readable" and not candidate.is_readable(schema)):
        return stat, output
    return candidate, new_output
