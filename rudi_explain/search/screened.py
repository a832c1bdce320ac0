"""Stage 1 with the readable grammar: the short catalog screened, forward selection, deepening, MCTS-SG for the rest.

:func:`fit_screened` is :meth:`StatisticsSearch._fit_screened
<rudi_explain.search.statistics_search.StatisticsSearch>`: it screens the short readable catalog
(:mod:`rudi_explain.search.catalog`) on a sample of training users, keeps a statistic only when it
explains measurably more on users it was not chosen on (added to an additive step model, or split
by the strata of the first kept statistic: :mod:`rudi_explain.search.selection`), deepens the best
by single edits, and leaves MCTS-SG what that cannot explain; then idle filters go
(:mod:`rudi_explain.search.filters`). It fills the search's ``statistics_`` and figures in place.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from rudi_explain.beside import Beside
from rudi_explain.correlation import batch_reward
from rudi_explain.search.catalog import (
    CHUNK,
    ColumnScreen,
    StepModel,
    complexity,
    neighbours,
    scalar_form,
    short_catalog,
    simpler_forms,
)
from rudi_explain.search.filters import held_users, replace_idle_filters
from rudi_explain.search.progress import catalog_work
from rudi_explain.search.selection import in_form, interaction_candidates, median_strata
from rudi_explain.statistics import Statistic
from rudi_explain.statistics.frame import FrameCache

__all__ = ["fit_screened", "simplest_spelling"]


#: Two forms of a statistic with the same value for this share of the sample's users or more are one statistic
#: to a reader (the share beyond which a literal tells a reader nothing: rules.literals.VACUOUS_SHARE).
SAME_VALUES = 0.99
#: Of two such forms the simpler replaces the kept one unless it loses more than ``min_gain`` of the check R^2
#: by this many standard errors of the per-user difference (the idle filters' ``z``, search.filters).
SIMPLER_Z = 2.0


#: A sample of fewer users than this is small: when the choosing half's best fails the check there,
#: the beam's runners-up are checked too (issue 26, the wage panel's 109 checking users: the best
#: choosing gain, a filtered statistic, lost 0.05 of the check R^2 while a runner-up gained 0.02).
#: At 1,000 a CDNOW case (1,500 customers, a sample under 1,000 after the held-out users) fell from
#: 0.805 to 0.793 in held-out fidelity; there the best's check is not dominated by its luck.
SMALL_SAMPLE = 500
#: A runner-up passes by ``min_gain`` plus this many standard errors: checking up to ``beam``
#: columns instead of one must not let noise through more often (on a pure-noise target over the
#: wage panel's 273 users, a statistic was kept in 1.5% of 200 seeds; the runners-up at the plain
#: bar made it 5.5%).
RUNNER_UP_Z = 1.0


def paired_loss(trial: np.ndarray, reference: np.ndarray) -> tuple[float, float]:
    """The mean of ``trial - reference`` (per-user errors over the variance: the R^2 lost) and its standard error."""
    d = np.asarray(trial, dtype=np.float64) - np.asarray(reference, dtype=np.float64)
    se = float(d.std(ddof=1)) / np.sqrt(d.size) if d.size > 1 else 0.0
    return float(round(d.mean(), 9)), float(round(se, 9))


def simplest_spelling(stat: Statistic, schema: Any, grammar: str = "readable") -> Statistic:
    """``stat`` as the simplest statistic of its equivalence key (``Select(x) | Max`` for
    ``Select(x) | SortBy(x, desc) | First``), or ``stat`` itself where no spelling is simpler.

    Parameters
    ----------
    stat : Statistic
    schema : Schema
        The data's schema: the simpler spelling must be valid (readable, in the readable grammar) there.
    grammar : {"readable", "paper"}

    Returns
    -------
    Statistic
        With the same key (so the same values on every user).
    """
    text = " | ".join(stat.key)
    if text == str(stat):
        return stat  # already its key's spelling (most of the catalog): nothing to parse
    try:
        plain = Statistic.parse(text)
    except (ValueError, TypeError, KeyError):
        return stat
    if plain.key != stat.key or complexity(plain)[:2] >= complexity(stat)[:2]:
        return stat
    ok = plain.is_readable(schema) if grammar == "readable" else plain.is_valid(schema)
    return plain if ok else stat


def fit_screened(search: Any) -> None:
    """The short readable catalog first, deepened; MCTS-SG for what it leaves.

    Choosing happens on one half of a sample of users and keeping on the
    other half (see :mod:`rudi_explain.search.catalog`): a statistic stays only
    when it explains at least ``min_gain`` of the target's variance more
    there, so the search can stop with fewer than ``n_stats``.
    """
    seqs, y = search._seqs, search._y
    n = seqs.n_users
    size = search.screen_size
    users = np.sort(search._rng.choice(n, size, replace=False)) if n > size else np.arange(n)
    held_out = held_users(search, users)
    if len(held_out) and n <= search.screen_size:
        users = np.setdiff1d(users, held_out)  # all users were in the sample: the held-out part leaves it
    order = search._rng.permutation(len(users))
    fit_rows, check_rows = np.sort(order[: len(users) // 2]), np.sort(order[len(users) // 2:])
    ys = y[users]
    total_var = float(ys[fit_rows].var()) or 1.0
    k = 1
    tick = lambda: search._report(k, 0, 0, "short catalog",
                                str(search.statistics_[-1]) if search.statistics_ else "screening the short catalog",
                                search.rewards_[-1] if search.rewards_ else 0.0)

    started = time.perf_counter()
    # Each statistic in its simplest spelling, simplest first: the catalog keeps the first spelling of an
    # equivalence key it meets ("SortBy(x, desc) | First" for "Max"), which ranks as deeper and lost the
    # near-ties and the duplicate columns to forms such as "Top(5) | Max" on some samples and not others.
    catalog = sorted((simplest_spelling(st, search._schema, search.grammar)
                      for st in short_catalog(seqs, search.grammar, search.max_depth)), key=complexity)
    seen: set[bytes] = set()
    sample = seqs.subset(users)  # evaluated as a whole: cached orders, no batch gathering
    frames = FrameCache(sample)  # each filter applied once to the sample, not once per statistic
    evaluated = iter(range(0, len(catalog) + CHUNK, CHUNK))  # the build checks for a cancel every CHUNK statistics

    work = catalog_work(catalog, search._schema)  # the ETA weighs catalog progress by outputs, not statistics

    def catalog_tick() -> None:
        done = min(next(evaluated), len(catalog))
        search._phase = ("catalog", done, len(catalog))
        search._work = (float(work[done]), float(work[-1]))
        tick()

    # The given statistics first: a catalog output with the same values is then dropped as
    # seen, so the user's form is the one that competes.
    given_keys = {st.key for st in search._given}
    given = ColumnScreen.build(search._given, sample, seen, cancel=None, frames=frames, n_jobs=search.n_jobs)
    given_outputs = len(seen)
    shadowed: set[Statistic] = set()
    screen = ColumnScreen.build(catalog, sample, seen, cancel=catalog_tick, max_columns=search.screen_columns,
                                target=ys, rows=fit_rows, frames=frames, n_jobs=search.n_jobs, shadowed=shadowed)
    search._phase, search._work = ("select", 0, 0), (0.0, 0.0)
    search.screened_ = len(catalog)
    search.catalog_columns_ = len(screen)
    search.catalog_outputs_ = len(seen) - given_outputs  # distinct varying outputs found, before any limit
    screen = ColumnScreen.join([given, screen], len(users))
    # The catalog's columns of each statistic none of whose outputs another took (and none trimmed) are
    # the screen a deepening step would build for it: edits that are catalog statistics are not evaluated again.
    in_catalog: dict[tuple, list[int]] = {}
    if search.catalog_columns_ == search.catalog_outputs_:
        in_catalog = {st.key: [] for st in catalog if st not in shadowed}
        for i, (st, _) in enumerate(screen.owners[len(given):], start=len(given)):
            if st.key in in_catalog:
                in_catalog[st.key].append(i)

    def is_given(column: ColumnScreen, i: int = 0) -> bool:
        return column.owners[i][0].key in given_keys

    def preference(stat: Statistic) -> tuple:
        """Of columns that explain about as much, the given one first, then the simplest."""
        return (stat.key not in given_keys, *complexity(stat))
    search.stage_seconds_ = {"catalog": time.perf_counter() - started, "select": 0.0, "mcts": 0.0}
    cache: dict[tuple, ColumnScreen] = {}  # deepening candidates, by equivalence key
    edits_of: dict[Statistic, list[Statistic]] = {}  # each statistic's single edits (catalog.neighbours)
    chosen = ColumnScreen.join([], len(users))  # the kept outputs
    taken: set[tuple[str, int]] = set()

    def model_residual() -> np.ndarray:
        model = StepModel(chosen.bins[fit_rows], chosen.values[fit_rows], ys[fit_rows])
        return ys[fit_rows] - model.predict(chosen.bins[fit_rows], chosen.values[fit_rows])

    split: set[tuple[str, int]] = set()  # kept for how their effect differs by strata (search.selection)
    strata: np.ndarray | None = None

    centred = ys[check_rows] - ys[check_rows].mean()
    check_variance = max(float(centred @ centred) / max(len(check_rows), 1), 1e-300)

    def check_residual(cols: ColumnScreen) -> np.ndarray:
        """The checking users' residuals under the step model of ``cols`` fitted on the choosing users."""
        cols = in_form(cols, split, strata)
        model = StepModel(cols.bins[fit_rows], cols.values[fit_rows], ys[fit_rows])
        return ys[check_rows] - model.predict(cols.bins[check_rows], cols.values[check_rows])

    def check_errors(cols: ColumnScreen) -> np.ndarray:
        """Each checking user's squared error (:func:`check_residual`) over the target's variance
        there: their mean is 1 - the check R^2."""
        err = check_residual(cols)
        return err * err / check_variance

    def check_r2(cols: ColumnScreen) -> float:
        err = check_residual(cols)
        return 1.0 - float(err @ err) / max(float(centred @ centred), 1e-300)

    # An edit equivalent to a given statistic (its filters in another order) is the given one.
    given_by_key = {st.key: st for st in search._given}

    def screen_of(stats: list[Statistic]) -> ColumnScreen:
        todo: dict[tuple, Statistic] = {}  # the first statistic of each key, built side by side
        for st in stats:
            if st.key not in cache:
                first = todo.setdefault(st.key, given_by_key.get(st.key, st))
                if st.key in in_catalog:  # the catalog's columns, owned by this spelling of the statistic
                    at = in_catalog[st.key]
                    cache[st.key] = ColumnScreen([(first, o) for _, o in (screen.owners[i] for i in at)],
                                                 screen.bins[:, at], screen.values[:, at])
                    del todo[st.key]
        built = ColumnScreen.build_each(list(todo.values()), sample, frames=frames, n_jobs=search.n_jobs)
        cache.update(zip(todo, built))
        return ColumnScreen.join([cache[st.key] for st in stats], len(users))

    def scalar(column: ColumnScreen) -> ColumnScreen:
        """The column as its simplest scalar statistic, where one has the same values."""
        stat, output = column.owners[0]
        if not is_given(column):
            plain = simplest_spelling(stat, search._schema, search.grammar)
            if plain is not stat:  # the same key: the same values
                stat = plain
                column = ColumnScreen([(plain, o) for _, o in column.owners], column.bins, column.values)
        simple, simple_output = scalar_form(stat, output, search._schema, search.grammar)
        if simple != stat:
            same = screen_of([simple])
            if simple_output < len(same) and np.array_equal(same.bins[:, simple_output], column.bins[:, 0]):
                return same.take(simple_output)
        return column

    def deepen(column: ColumnScreen, gain: float, residual: np.ndarray,
               base: ColumnScreen | None = None) -> tuple[ColumnScreen, float]:
        """Edit one operator at a time while that explains measurably more, on the
        choosing half and on the checking half (which the edit was not chosen on),
        next to ``base`` (default: the kept columns)."""
        base = chosen if base is None else base
        for _ in range(2 * search.max_depth):
            tick()
            stat = column.owners[0][0]
            if stat not in edits_of:  # the same statistic is deepened again at later steps
                edits_of[stat] = neighbours(stat, search._schema, search.max_depth, search.grammar)
            edits = [st for st in edits_of[stat] if st.key not in search._marked]
            cols = screen_of(edits)
            # Only edits that explain measurably more compete; of those, the simplest near the
            # best. A deeper edit must also not be about as good (within the 5% by which the
            # simpler wins everywhere): its extra operator has to earn its place.
            floor = np.array([gain + search.min_gain if st.depth <= stat.depth else
                              max(gain + search.min_gain, gain + 0.05 * gain + 0.0005)
                              for st, _ in cols.owners])
            better = best_of(cols, residual, floor=floor)
            if better is None or better[0] < gain + search.min_gain:
                break
            edited = scalar(cols.take(better[1]))
            if check_r2(ColumnScreen.join([base, edited], len(users))) < \
                    check_r2(ColumnScreen.join([base, column], len(users))) + search.min_gain:
                break
            gain, column = better[0], edited
        return column, gain

    last_gains: list[tuple[ColumnScreen, np.ndarray, np.ndarray]] = []  # the latest scoring, reused once

    def rounded_gains(cols: ColumnScreen, residual: np.ndarray) -> np.ndarray:
        """``cols.gains`` of ``residual`` on the choosing rows, rounded (no decision on a float near-tie).
        The screen's choice and its runners-up read the same scores: they are computed once."""
        if last_gains and last_gains[0][0] is cols and last_gains[0][1] is residual:
            return last_gains[0][2]
        gains = np.round(cols.gains(residual, fit_rows, total_var, n_jobs=search.n_jobs), 6)
        last_gains[:] = [(cols, residual, gains)]
        return gains

    def runners_up(cols: ColumnScreen, residual: np.ndarray, pick: int) -> list[tuple[float, int]]:
        """The next best columns of other statistics: greedy edits from one start can stall."""
        gains = rounded_gains(cols, residual)
        out: list[tuple[float, int]] = []
        stats = {cols.owners[pick][0]}
        for i in np.lexsort((np.arange(len(cols)), -gains)).tolist():  # by gain, then place: a stable order
            if len(out) == search.beam - 1 or gains[i] < search.min_gain:
                break
            stat = cols.owners[i][0]
            if stat not in stats and (str(stat), cols.owners[i][1]) not in taken:
                stats.add(stat)
                out.append((float(gains[i]), i))
        return out

    def best_of(cols: ColumnScreen, residual: np.ndarray,
                floor: float | np.ndarray = -np.inf) -> tuple[float, int] | None:
        """The simplest of the columns that explain about as much as the best (and at
        least ``floor``, one value or one per column): (gain, index), or None."""
        gains = rounded_gains(cols, residual)
        floor = np.broadcast_to(np.round(floor, 6), gains.shape)
        ok = [i for i in np.flatnonzero(gains >= floor).tolist()
              if (str(cols.owners[i][0]), cols.owners[i][1]) not in taken]
        if not ok:
            return None
        top = max(gains[i] for i in ok)
        # Of those that explain about as much as the best, the simplest wins.
        near = [i for i in ok if gains[i] >= top - (0.05 * top + 0.0005)]
        pick = min(near, key=lambda i: (preference(cols.owners[i][0]), -gains[i], cols.owners[i][1]))
        return float(gains[pick]), pick

    def swap(j: int, new_column: ColumnScreen | None) -> None:
        """Put ``new_column`` in place of kept column ``j`` (None: drop it), and keep
        ``statistics_`` in step. A statistic left by all its columns stays marked:
        selection does not walk back to it."""
        nonlocal chosen
        old, old_output = chosen.owners[j]
        others = [chosen.take(i) for i in range(len(chosen)) if i != j]
        shared = any(st.key == old.key for st, _ in chosen.owners[:j] + chosen.owners[j + 1:])
        if new_column is None:
            chosen = ColumnScreen.join(others, len(users))
        else:
            chosen = ColumnScreen.join(others[:j] + [new_column] + others[j:], len(users))
        taken.discard((str(old), old_output))
        if (str(old), old_output) in split and new_column is not None:
            split.add((str(new_column.owners[0][0]), new_column.owners[0][1]))
        index = next((i for i, st in enumerate(search.statistics_) if st.key == old.key), None)
        new = None if new_column is None else new_column.owners[0][0]
        if new_column is not None and new is not None:
            taken.add((str(new), new_column.owners[0][1]))
            if any(st.key == new.key for st in search.statistics_):
                new = None  # another output of a statistic already kept: nothing to add
        if shared or index is None:  # another output of the old statistic stays
            if new is not None:
                search._accept(new, float("nan"), search._y)
            return
        if new is None:
            for kept in (search.statistics_, search._values, search.rewards_, search.partial_r_):
                del kept[index]
            return
        values = new.evaluate(search._seqs)
        search.statistics_[index], search._values[index] = new, values
        search.partial_r_[index] = batch_reward(values, search._y, "paper")
        search._marked.add(new.key)

    def revise() -> bool:
        """Deepen each kept column against the residual of the others; True if one changed."""
        changed = False
        for j in range(len(chosen)):
            tick()
            if is_given(chosen, j):
                continue  # kept as the user gave it
            rest = ColumnScreen.join([chosen.take(i) for i in range(len(chosen)) if i != j], len(users))
            model = StepModel(rest.bins[fit_rows], rest.values[fit_rows], ys[fit_rows])
            residual = ys[fit_rows] - model.predict(rest.bins[fit_rows], rest.values[fit_rows])
            column = chosen.take(j)
            gain = float(np.round(column.gains(residual, fit_rows, total_var, n_jobs=search.n_jobs), 6)[0])
            edited, _ = deepen(column, gain, residual, base=rest)
            old, new = column.owners[0][0], edited.owners[0][0]
            if new.key == old.key or new.key in search._marked:
                continue
            swap(j, edited)
            changed = True
        return changed

    def simpler_column(column: ColumnScreen) -> list[ColumnScreen]:
        """The kept column's statistic one edit simpler (:func:`simpler_forms`), each as the
        column of the same output (the same category of a one-hot selection), simplest first."""
        stat, output = column.owners[0]
        name = stat.output_names(search._schema)[output]
        out = []
        for simple in simpler_forms(stat, search._schema, search.grammar):
            names = simple.output_names(search._schema)
            cols = screen_of([simple])
            for i, (_, o) in enumerate(cols.owners):
                if len(names) == 1 or names[o] == name:
                    out.append(scalar(cols.take(i)))
        return out

    raw: dict[tuple, np.ndarray] = {}  # sample values of the columns simplify compares, by (key, output)

    def same_share(a: ColumnScreen, b: ColumnScreen) -> float:
        """Share of the sample's users on whom the first columns of ``a`` and ``b`` have the same value."""
        for st, o in (a.owners[0], b.owners[0]):
            if (st.key, o) not in raw:
                raw[st.key, o] = np.asarray(st.evaluate(sample), dtype=np.float64).reshape(len(users), -1)[:, o]
        va, vb = raw[a.owners[0][0].key, a.owners[0][1]], raw[b.owners[0][0].key, b.owners[0][1]]
        return float(np.mean((va == vb) | (np.isnan(va) & np.isnan(vb))))

    def simplify() -> bool:
        """Replace each kept column by a simpler form of it unless it explains measurably
        more (``min_gain``) next to the others on the checking users, which it was not
        chosen on; True if one changed.

        The choosing half favours a deeper variant: of the thousands of filters a
        statistic can take, the best on those users is partly luck (and a first pick made
        against a residual that others later explain can be a blend); that luck does not
        hold on the checking half. A simpler form already kept elsewhere means the
        column goes, unless it explains measurably more than nothing there. A simpler
        form with the same value for :data:`SAME_VALUES` of the sample's users is the
        same statistic to a reader: it may lose ``min_gain`` plus :data:`SIMPLER_Z`
        standard errors of the per-user difference (issue 26: the form kept must not
        hang on which few users the seed put in the sample).
        """
        changed = False
        j = 0
        reference = None  # the checking users' errors with column j as selection left it
        while j < len(chosen):
            tick()
            if is_given(chosen, j):
                j, reference = j + 1, None  # kept as the user gave it
                continue
            rest = ColumnScreen.join([chosen.take(i) for i in range(len(chosen)) if i != j], len(users))
            column = chosen.take(j)
            if reference is None:
                reference = check_errors(ColumnScreen.join([rest, column], len(users)))
            kept = {(str(st), o) for st, o in rest.owners}
            for simple in simpler_column(column):
                again = (str(simple.owners[0][0]), simple.owners[0][1]) in kept
                trial = check_errors(rest if again else ColumnScreen.join([rest, simple], len(users)))
                # Against the column as selected, not the last simpler step: a chain of
                # steps each within min_gain must not lose more than min_gain in all. A form with the
                # same value for nearly every user ("the largest" beside "the largest of the first 5")
                # scores apart by its few other users alone: give or take their noise, as for idle
                # filters (search.filters), or which form stays hangs on the sample.
                lost, se = paired_loss(trial, reference)
                allowed = search.min_gain
                if not again and same_share(column, simple) >= SAME_VALUES:
                    allowed += SIMPLER_Z * se
                if lost <= allowed:
                    swap(j, None if again else simple)
                    changed = True
                    break
            else:
                j, reference = j + 1, None  # nothing simpler explains about as much: it stays
                continue
            if again:
                reference = None  # column j is gone: the next one is at j now
            # Otherwise the simpler form stays at j and is tried once more (depth 3 to 1).
        return changed

    def next_passing(finals: list[tuple[ColumnScreen, float]], column: ColumnScreen,
                     after: float) -> tuple[ColumnScreen, float]:
        """On a small sample, where the choosing half's best can be its luck, the other finals
        (the beam's runners-up, deepened) by their choosing gain: the first that explains at least
        ``min_gain`` plus one standard error of the per-user difference more on the checking users;
        else ``(column, after)`` as they were."""
        reference = check_errors(chosen)
        for other, _ in sorted(finals, key=lambda cg: -cg[1]):
            if other.owners[0] == column.owners[0]:
                continue
            trial = check_errors(ColumnScreen.join([chosen, other], len(users)))
            lost, se = paired_loss(trial, reference)
            if -lost >= search.min_gain + RUNNER_UP_Z * se:
                return other, check_r2(ColumnScreen.join([chosen, other], len(users)))
        return column, after

    def interacting(residual: np.ndarray, before: float) -> tuple[ColumnScreen, float] | None:
        """The first of the columns whose effect differs most by the strata of the first kept
        column (:mod:`rudi_explain.search.selection`) that, split by them, raises the check
        score at least ``min_gain`` above ``before``: (column, score), or None."""
        nonlocal strata
        if strata is None and len(chosen):
            strata = median_strata(chosen.take(0), fit_rows)
        for i in [] if strata is None else interaction_candidates(
                screen, residual, fit_rows, strata, total_var, search.min_gain, search.beam, taken, preference):
            column = scalar(screen.take(i))
            key = (str(column.owners[0][0]), column.owners[0][1])
            split.add(key)
            after = check_r2(ColumnScreen.join([chosen, column], len(users)))
            if after - before >= search.min_gain:
                return column, after
            split.discard(key)
        return None

    def mcts_verdict(k: int, residual: np.ndarray) -> tuple[ColumnScreen, float] | None:
        """MCTS-SG's statistic against the residual, as a column, and the checking users' R^2 with it;
        None where it finds none or the checking users refuse it (as they refuse a short one: by
        ``min_gain``, on a small sample the runner-up rule with no runners-up)."""
        target = search._residual()
        mcts_start = time.perf_counter()
        search._phase = ("mcts", 0, 0)
        found_deep = search._mcts_one(k, target)
        search._phase = ("select", 0, 0)
        search.stage_seconds_["mcts"] += time.perf_counter() - mcts_start
        if found_deep is None:
            return None
        cols = screen_of([found_deep[0]])
        best = best_of(cols, residual)
        if best is None:
            return None
        column = scalar(cols.take(best[1]))
        after = check_r2(ColumnScreen.join([chosen, column], len(users)))
        return (column, after) if after - check_r2(chosen) >= search.min_gain else None

    def mcts_pick(k: int, residual: np.ndarray) -> tuple[ColumnScreen, float] | None:
        """:func:`mcts_verdict`, in this thread or beside the job.

        Beside (``search.beside``, two cores, Linux): a forked child (:func:`start_beside`) finds the
        statistic and the checking users' verdict while this process goes on as if it were refused (in every case
        measured, 22 trees on 49 cases of bench_real.py, it was); the job asks for the verdict at its
        end (:meth:`StatisticsSearch.mcts_refused`) and starts again in this thread where it was kept.
        In this thread, a refused statistic leaves the screens' cache as it found it, so the rest of
        the search reads the same spellings either way.
        """
        if search.beside and search.tree_goes_beside():
            state = selection_state()  # as the tree would have found it: the step's split candidate changes it

            def in_child() -> dict[str, Any]:
                put_back(state)
                search.n_jobs, search._progress = 1, None  # no pool or progress callback inherited
                seconds, tree_seconds = search.stage_seconds_["mcts"], search.tree_seconds_
                verdict = mcts_verdict(k, residual)
                return {"kept": verdict is not None, "seconds": search.stage_seconds_["mcts"] - seconds,
                        "tree_seconds": search.tree_seconds_ - tree_seconds}
            beside_next.append(in_child)
            return None
        return mcts_here(k, residual)

    def mcts_here(k: int, residual: np.ndarray) -> tuple[ColumnScreen, float] | None:
        kept = selection_state()
        verdict = mcts_verdict(k, residual)
        if verdict is None:
            put_back(kept)
        return verdict

    beside_next: list[Any] = []  # the tree's work, forked once the step's other candidate is weighed

    def start_beside() -> None:
        """Fork the tree's process :func:`mcts_pick` left: after the step's split candidate is weighed, whose
        large arrays would otherwise be written while the child shares their pages (copied on write: that
        weighing took twice the CPU beside a fresh child); it sees the state as :func:`mcts_pick` left it."""
        if beside_next:
            in_child = beside_next.pop()
            try:
                search._mcts_beside = Beside(in_child)
            except OSError:  # no fork here (a sandbox, memory committed strictly): the tree in this thread
                search._mcts_beside = Beside.done(as_child(in_child))

    def as_child(in_child: Any) -> dict[str, Any]:
        """``in_child()`` in this thread, what it changes put back after: as a child's work, unseen here."""
        now = selection_state()
        rest = (search._rng.bit_generator.state, search.n_jobs, search._progress, dict(search.stage_seconds_),
                search.tree_seconds_)
        try:
            return in_child()
        finally:
            put_back(now)
            search._rng.bit_generator.state = rest[0]
            search.n_jobs, search._progress, search.stage_seconds_, search.tree_seconds_ = rest[1:]

    def selection_state() -> tuple[Any, ...]:
        """What the tree's verdict reads and a split candidate's weighing may change: the split columns, the
        strata, the screens' cache and the last gains (copies)."""
        return set(split), strata, dict(cache), list(last_gains)

    def put_back(state: tuple[Any, ...]) -> None:
        nonlocal strata
        split.clear()
        split.update(state[0])
        strata = state[1]
        cache.clear()
        cache.update(state[2])
        last_gains[:] = state[3]

    mcts_left = True
    for revision in range(2):
        # Forward selection; then each kept statistic is revised once against what the
        # others leave (a first pick made against an unexplained residual can be a blend
        # of two planted statistics), and selection goes on from the revised model.
        while len(search.statistics_) < search.n_stats:
            k = len(search.statistics_) + 1
            residual = model_residual()
            found = best_of(screen, residual)
            candidate = None
            finals: list[tuple[ColumnScreen, float]] = []
            if found is not None and found[0] >= search.min_gain:
                # A given statistic competes as it is: it is neither deepened nor recast.
                finals = [(screen.take(i), gain) if is_given(screen, i) else
                          deepen(scalar(screen.take(i)), gain, residual)
                          for gain, i in [found] + runners_up(screen, residual, found[1])]
                # The best after deepening; of about equals, the simplest.
                top = max(g for _, g in finals)
                near = [(c, g) for c, g in finals if g >= top - (0.05 * top + 0.0005)]
                if len({c.owners[0] for c, _ in near}) > 1:
                    # About as much on the checking users too, or the one that explains clearly
                    # more there wins: "the 95th percentile" is simpler than "the total of the
                    # 5 largest", but not its equal when the target is made of the latter.
                    before = check_r2(chosen)
                    held = [round(check_r2(ColumnScreen.join([chosen, c], len(users))) - before, 6)
                            for c, _ in near]
                    best_held = max(held)
                    tolerance = 0.01 * abs(best_held) + search.min_gain
                    near = [cg for cg, h in zip(near, held) if h >= best_held - tolerance]
                candidate = min(near, key=lambda cg: (preference(cg[0].owners[0][0]), -cg[1]))
            elif mcts_left:
                # Nothing short is left: MCTS-SG against the residual, deeper statistics included.
                mcts_left = False  # one try: a second would search the same residual
                deep = mcts_pick(k, residual)
                if deep is not None:
                    candidate = deep
            before = check_r2(chosen)
            if candidate is not None:
                column = candidate[0]
                after = check_r2(ColumnScreen.join([chosen, column], len(users)))
                if after - before < search.min_gain and len(users) < SMALL_SAMPLE:
                    column, after = next_passing(finals, column, after)
            if candidate is None or after - before < search.min_gain:
                # No additive candidate passes: the one whose effect differs most by strata may.
                joint = interacting(residual, before)
                start_beside()
                if joint is None:
                    break  # not measurably better on users it was not chosen on
                column, after = joint
            stat, output = column.owners[0]
            chosen = ColumnScreen.join([chosen, column], len(users))
            taken.add((str(stat), output))
            if stat.key in search._marked:  # another output of a statistic already kept
                continue
            search._accept(stat, after - before, search._y)
            search._report(k, 0, 0, "", str(stat), after - before)
        # Revising deepens on the choosing half; simplifying then asks the checking half
        # whether each extra operator earns its place.
        changed = revise() if revision == 0 else False
        if not simplify() and not changed or revision == 1:
            break

    start_beside()  # a guard: mcts_pick's step starts it above, and a tree set aside must not go unasked
    search.check_r2_ = check_r2(chosen)
    search.stage_seconds_["select"] = time.perf_counter() - started - sum(search.stage_seconds_.values())
    if len(held_out) and search.drop_idle_filters:
        replace_idle_filters(search, users[fit_rows], held_out, given_keys, tick)

