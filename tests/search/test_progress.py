"""What the search reports while it runs: the catalog's work, for an estimate of the time left (issue 27)."""

from __future__ import annotations

import numpy as np
import pytest

import rudi_explain as rx
from rudi_explain.search import progress
from rudi_explain.search.catalog import short_catalog
from rudi_explain.search.progress import SearchProgress, catalog_parts, catalog_work
from rudi_explain.statistics import Statistic
from rudi_explain.statistics.frame import FrameCache
from rudi_explain.statistics.grammar import Schema


def _first_uses(catalog: list, seqs: rx.Sequences) -> tuple[np.ndarray, np.ndarray]:
    """The reference: evaluate the catalog in order on fresh data with a frame cache, and count what each
    statistic is the first to build: frames of row-operator prefixes, and cached sort orders."""
    seqs = seqs.subset(np.arange(seqs.n_users))  # its own cache of sort orders
    frames = FrameCache(seqs)
    orders = lambda: sum(isinstance(k, tuple) and k[0] == "within_user_order" for k in seqs._cache)  # noqa: E731
    # the frames of row-operator prefixes (a percentile's events sorted once for the 7 percentiles after one
    # filter are kept too: that cost is the order's, counted apart)
    prefix_frames = lambda: sum(not any(isinstance(p, tuple) and p[:1] == ("sorted for",) for p in k)  # noqa: E731
                                for k in frames.keys())
    new_frames, new_orders = [], []
    for stat in catalog:
        f, o = prefix_frames(), orders()
        stat.evaluate(seqs, frames=frames)
        new_frames.append(prefix_frames() - f)
        new_orders.append(orders() - o)
    return np.array(new_frames), np.array(new_orders)


def test_catalog_parts_count_the_outputs_and_what_each_statistic_is_first_to_build():
    for make in (rx.datasets.make_payments, rx.datasets.make_edits):
        seqs = make(200, random_state=1).sequences()
        catalog = short_catalog(seqs, "readable", 4)
        per_user = seqs.n_events / seqs.n_users
        parts = catalog_parts(catalog, Schema.of(seqs), per_user)
        assert parts.shape == (len(catalog), 5) and np.all(parts[:, 0] == 1.0)
        # the outputs: the columns a statistic's values really have (every 7th, a quick test)
        some = np.arange(0, len(catalog), 7)
        columns = [np.asarray(catalog[i].evaluate(seqs)).reshape(seqs.n_users, -1).shape[1] for i in some]
        assert np.array_equal(parts[some, 1], columns) and max(columns) > 1
        # first uses, against the frame cache and the sort orders the evaluation really builds
        new_frames, new_orders = _first_uses(catalog, seqs)
        assert np.allclose(parts[:, 4], per_user * new_orders)  # each new order sorts every event once
        one = np.array([len(st.operators) <= 3 for st in catalog])  # one row operator: it reads every event
        assert np.allclose(parts[one, 3], per_user * new_frames[one])
        assert np.all((parts[:, 3] > 0) == (new_frames > 0))
        assert new_frames.sum() > 10 and new_orders.sum() + (make is rx.datasets.make_edits) >= 1
        # the events aggregated never exceed the user's events, and a filter leaves fewer
        assert np.all(parts[:, 2] <= per_user + 1e-9)
        assert np.all(parts[[not st.row_operators for st in catalog], 2] == per_user)


def test_a_filter_or_an_order_costs_its_pass_only_on_first_use():
    seqs = rx.datasets.make_payments(200, random_state=2).sequences()
    schema = Schema.of(seqs)
    f = "Select(amount) | FilterBy(channel=atm) | "
    a, b = Statistic.parse(f + "Sum"), Statistic.parse(f + "Max")
    alone = np.diff(catalog_work([b], schema))[0]
    after = np.diff(catalog_work([a, b], schema))[1]
    # the same statistic, its filter applied by the one before: less by the events that filter reads
    assert alone - after == pytest.approx(progress.WORK_PER_EVENT_PASSED * progress.EVENTS_PER_USER)
    p25, p75 = Statistic.parse("Select(amount) | Percentile(25)"), Statistic.parse("Select(amount) | Percentile(75)")
    first, second = np.diff(catalog_work([p25, p75], schema, events_per_user=40.0))
    assert first - second == pytest.approx(progress.WORK_PER_EVENT_SORTED * 40.0)  # the order, sorted once
    # a catalog whose filters are all new costs more than the same statistics with their filters shared
    shared = [Statistic.parse(f"Select(amount) | FilterBy(channel={c}) | {agg}")
              for c in ("atm", "pos") for agg in ("Sum", "Max")]
    new = [Statistic.parse(f"Select(amount) | FilterBy(channel={c}) | Sum")
           for c in ("atm", "pos", "online", "transfer")]
    passes = lambda stats: catalog_parts(stats, schema)[:, 3].sum()  # noqa: E731
    assert passes(new) == pytest.approx(2 * passes(shared))
    # the default events per user where the search gives none
    assert np.allclose(catalog_work(shared, schema), catalog_work(shared, schema, progress.EVENTS_PER_USER))


def test_the_catalogs_work_is_optional_in_a_progress_event():
    event = SearchProgress("mcts", 1, 20, 0, 0, 500, "", "", 0.0, (), 0.1)
    assert event.phase_work_done == 0.0 and event.phase_work_total == 0.0


def test_the_search_reports_the_catalogs_work_as_it_goes():
    from rudi_explain.search import StatisticsSearch

    data = rx.datasets.make_payments(400, random_state=2)
    seqs = data.sequences()
    events: list[SearchProgress] = []
    StatisticsSearch(n_stats=1, n_simulations=10, random_state=0).fit(seqs, data.risk.to_numpy(),
                                                                      progress=events.append)
    catalog = [e for e in events if e.phase == "catalog"]
    later = [e for e in events if e.phase not in ("catalog", "")]
    total = catalog_work(short_catalog(seqs, "readable", 4), Schema.of(seqs))[-1]
    assert catalog and later
    # the work done is the work of the statistics done, rises with them and reaches near the whole
    assert all(e.phase_work_total == total for e in catalog)
    done = [e.phase_work_done for e in catalog]
    assert done == sorted(done) and done[0] == 0.0 and done[-1] > 0.8 * total
    assert all(e.phase_work_done == e.phase_work_total == 0.0 for e in later)
