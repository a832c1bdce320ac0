"""What the search reports while it runs: the catalog's work, for an estimate of the time left (issue 27)."""

from __future__ import annotations

import numpy as np

import rudi_explain as rx
from rudi_explain.search.catalog import short_catalog
from rudi_explain.search.progress import SearchProgress, catalog_work
from rudi_explain.statistics.grammar import Schema


def test_catalog_work_counts_one_plus_the_columns_each_statistic_evaluates_to():
    for make in (rx.datasets.make_payments, rx.datasets.make_edits):
        seqs = make(200, random_state=1).sequences()
        catalog = short_catalog(seqs, "readable", 4)[::7]  # every 7th: all kinds, a quick test
        work = catalog_work(catalog, Schema.of(seqs))
        # the reference: the columns a statistic's values really have, one at a time
        columns = [np.asarray(st.evaluate(seqs)).reshape(seqs.n_users, -1).shape[1] for st in catalog]
        assert work[0] == 0.0 and len(work) == len(catalog) + 1
        assert np.allclose(np.diff(work), 1.0 + np.array(columns))
        assert max(columns) > 1  # vector statistics among them: the work is not the count


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
