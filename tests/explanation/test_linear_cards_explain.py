"""Linear cards through explain() (issue 26, item 2): chosen where the teacher is linear in a statistic, and
everything that reads ``exp.rules`` (predict, the SQL export, save/load) gives exactly the scorecard's scores."""

from __future__ import annotations

import json
import zipfile

import duckdb
import numpy as np
import pandas as pd
import pytest

import rudi_explain as rx
from rudi_explain.exceptions import InputError
from rudi_explain.explanation import scorecard_step
from rudi_explain.rules.ruleset import LinearTerm
from rudi_explain.sql.warehouse import EventTable

SEEDS = range(4)
TOTAL = "Select(amount) | Sum"


def _planted(seed: int, n_users: int = 500):
    """Payments whose teacher is linear in the total amount (clipped to its 5-95% range), plus noise."""
    data = rx.datasets.make_payments(n_users, random_state=seed)
    seqs = rx.Sequences(data.events)
    x = rx.Statistic.parse(TOTAL).evaluate(seqs).ravel()
    lo, hi = np.quantile(x, [0.05, 0.95])
    rng = np.random.default_rng(seed)
    y = 2.0 * (np.clip(x, lo, hi) - lo) / (hi - lo) + rng.normal(0, 0.1, x.size)
    return data, seqs, pd.Series(y, index=pd.Index(seqs.users, name=seqs.user_column))


@pytest.fixture(scope="module")
def runs():
    out = []
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(scorecard_step, "LINEAR_CARDS", True)  # what is tested here, whatever the default
        for seed in SEEDS:
            data, seqs, y = _planted(seed)
            exp = rx.explain(None, seqs, scores=y, statistics=[TOTAL, data.planted[0]], search=False,
                             background=False, progress=False, random_state=seed)
            out.append((data, seqs, exp))
    return out


def _linear_on_total(exp) -> bool:
    return any(c.linear is not None and str(exp.statistics[int(exp.literals.output_statistic[c.column])]) == TOTAL
               for c in exp.scorecard.cards)


def test_a_statistic_the_teacher_is_linear_in_gets_a_linear_card_in_most_seeds(runs):
    linear = [_linear_on_total(exp) for _, _, exp in runs]
    assert sum(linear) >= 0.75 * len(runs), linear
    for _, _, exp in runs:
        if _linear_on_total(exp):
            assert any(isinstance(r, LinearTerm) and r.lo is not None for r in exp.rules)
            assert exp.report()["fidelity_test"] > 0.85


def test_the_rules_give_exactly_the_scorecards_scores(runs):
    for _, seqs, exp in runs:
        V = exp.result.values
        np.testing.assert_allclose(exp.rules.score(exp.rules.matrix(V)), exp.scorecard.predict(V),
                                   rtol=1e-9, atol=1e-9)
        np.testing.assert_array_equal(exp.student_scores.to_numpy(), exp.rules.score(exp.rules.matrix(V)))
        np.testing.assert_array_equal(exp.predict(seqs).to_numpy(), exp.student_scores.to_numpy())
        assert exp.scorecard.mismatch(exp.rules, V) is None


def test_duckdb_scores_every_user_as_exp_predict(runs):
    data, seqs, exp = next(r for r in runs if _linear_on_total(r[2]))
    con = duckdb.connect()
    con.register("events", data.events)
    got = EventTable((con, "events")).score(exp).reindex(seqs.users)
    np.testing.assert_array_equal(got["score"].to_numpy(), exp.predict(seqs).to_numpy())
    sql = exp.rules.to_sql(literals=exp.literals, vocabularies=exp.literals.vocabularies,
                           reference_time=seqs.reference_time, time_unit="datetime")
    assert "LEAST(GREATEST(" in sql and sql.count("/* card: ") == len(exp.scorecard.cards)


def test_save_and_load_keep_linear_cards_and_their_scores(runs, tmp_path):
    _, seqs, exp = next(r for r in runs if _linear_on_total(r[2]))
    path = exp.save(tmp_path / "linear.rudi")
    back = rx.load(path)
    np.testing.assert_array_equal(back.predict(seqs).to_numpy(), exp.predict(seqs).to_numpy())
    np.testing.assert_array_equal(back.student_scores.to_numpy(), exp.student_scores.to_numpy())
    assert [c.to_dict() for c in back.scorecard.cards] == [c.to_dict() for c in exp.scorecard.cards]
    assert [str(r) for r in back.rules] == [str(r) for r in exp.rules]


@pytest.mark.parametrize("damage, message", [({"lo": "0"}, "bound must be a number"),
                                             ({"lo": 1e300, "hi": 0.0}, "above hi"),
                                             ({"linear": 10 ** 6}, "reads output")])
def test_a_damaged_linear_term_is_refused_naming_the_field(runs, tmp_path, damage, message):
    _, _, exp = next(r for r in runs if _linear_on_total(r[2]))
    path = exp.save(tmp_path / "linear.rudi")
    with zipfile.ZipFile(path) as zf:
        entries = {name: zf.read(name) for name in zf.namelist()}
    meta = json.loads(entries["explanation.json"])
    term = next(r for r in meta["rules"]["rules"] if "linear" in r)
    term.update(damage)
    entries["explanation.json"] = json.dumps(meta).encode()
    bad = tmp_path / "damaged.rudi"
    with zipfile.ZipFile(bad, "w") as zf:
        for name, data in entries.items():
            zf.writestr(name, data)
    with pytest.raises(InputError, match=f"is damaged: field 'rules'.*{message}"):
        rx.load(bad)
