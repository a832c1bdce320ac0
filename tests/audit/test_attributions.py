"""Event attributions: IG completeness through the adapter, occlusion against a plain loop, agreement by hand."""

import numpy as np
import pandas as pd
import pytest
import torch
from tiny import tiny_explanation

import rudi_explain as rx
from rudi_explain.audit.attributions import (
    TeacherUnavailable,
    agreement_summary,
    attribute_events,
    rule_event_mask,
    user_attributions,
)
from rudi_explain.explanation import Explanation, JobInputs
from rudi_explain.teachers.adapters import as_teacher, encode_padded
from rudi_explain.teachers.demo_gru import make_demo_pipeline, train_demo_gru
from rudi_explain.views.payloads import feeding_rows

MAX_LEN = 16


@pytest.fixture(scope="module")
def payments():
    data = rx.datasets.make_payments(240, random_state=3)
    return data, data.sequences()


@pytest.fixture(scope="module")
def gru(payments):
    data, seqs = payments
    return train_demo_gru(seqs, data.labels, hidden_size=8, epochs=1, max_len=MAX_LEN, random_state=0)


def _amount_sum(s: rx.Sequences) -> np.ndarray:
    """A callable teacher: each user's total amount (dropping an event lowers it by that amount)."""
    return np.bincount(s.event_user, weights=np.nan_to_num(s.values["amount"]), minlength=s.n_users)


# ------------------------------------------------------------------ integrated gradients
@pytest.mark.parametrize("seed", [0, 1])
def test_integrated_gradients_are_complete_through_the_adapter(payments, gru, seed):
    data, seqs = payments
    if seed:  # another trained GRU: completeness is a property of the method, not of one model
        gru = train_demo_gru(seqs, data.labels, hidden_size=8, epochs=2, max_len=MAX_LEN, random_state=seed)
    idx = np.arange(0, 240, 8)  # 30 users, short and long (older than max_len events among them)
    batch = attribute_events(gru, seqs, idx, "integrated_gradients", batch_size=7)
    sub = seqs.subset(idx)
    score = as_teacher(gru).score(sub)
    cat, num, lengths = encode_padded(sub, None, MAX_LEN, vocabularies=gru.vocabularies_)
    with torch.no_grad():  # the baseline, straight from the module: every event's content padded out
        reference = gru(torch.zeros_like(cat), torch.zeros_like(num), lengths).double().numpy()
    total = np.bincount(batch.segment, weights=np.nan_to_num(batch.attribution), minlength=len(idx))
    gap = np.abs(total - (score - reference))
    # Completeness on every user, to a small share of the score change.
    assert (gap <= 0.02 * np.abs(score - reference) + 2e-3).all(), gap.max()
    np.testing.assert_allclose(batch.score, score, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(batch.reference, reference, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(batch.delta, total - (score - reference), atol=1e-6)
    # The model reads each user's last 16 events: those are attributed, older ones are NaN.
    n = seqs.lengths[idx]
    read_from = n[batch.segment] - np.minimum(n, MAX_LEN)[batch.segment]
    assert (np.isfinite(batch.attribution) == (batch.local >= read_from)).all()
    assert (n > MAX_LEN).any() and np.isnan(batch.attribution).any()
    # Per-column attributions add up to the event's: one column per data column.
    assert set(batch.columns) == set(seqs.categorical) | set(seqs.numerical)
    by_column = np.sum([np.nan_to_num(v) for v in batch.columns.values()], axis=0)
    np.testing.assert_allclose(by_column, np.nan_to_num(batch.attribution), atol=1e-9)


def test_ablation_of_one_event_is_the_score_change_when_it_is_padded_out(payments, gru):
    _, seqs = payments
    idx = np.array([1, 3, 5, 40])
    batch = attribute_events(gru, seqs, idx, "ablation")
    sub = seqs.subset(idx)
    cat, num, lengths = encode_padded(sub, None, MAX_LEN, vocabularies=gru.vocabularies_)
    with torch.no_grad():
        full = gru(cat, num, lengths).double().numpy()
        for b in range(len(idx)):  # a plain loop: blank each read event in turn
            n, read = seqs.lengths[idx[b]], int(lengths[b])
            got = batch.attribution[batch.segment == b][n - read:]
            for t in range(read):
                c, x = cat.clone(), num.clone()
                c[b, t], x[b, t] = 0, 0.0
                assert got[t] == pytest.approx(full[b] - gru(c, x, lengths).double().numpy()[b], abs=1e-5)


# ------------------------------------------------------------------ occlusion
def _loop_occlusion(teacher, seqs, user_index):
    """Drop each event of one user in turn and score the rest: one teacher call per event."""
    events = seqs.events(seqs.users[user_index])
    kw = dict(user=seqs.user_column, time=seqs.time_column, categorical=seqs.categorical,
              numerical=seqs.numerical, vocabularies=seqs.vocabularies, reference_time=seqs.reference_time)
    t = as_teacher(teacher)
    base = t.score(rx.Sequences(events, **kw))[0]
    return np.array([base - t.score(rx.Sequences(events.drop(index=k), **kw))[0] for k in range(len(events))])


@pytest.mark.parametrize("kind", ["sklearn", "callable"])
def test_occlusion_equals_a_loop_over_events(payments, kind):
    data, seqs = payments
    if kind == "sklearn":
        train = seqs.subset(np.arange(120))
        teacher = make_demo_pipeline(random_state=0).fit(train, data.labels.reindex(train.users))
    else:
        teacher = lambda s: np.log1p(np.abs(_amount_sum(s))) + 0.1 * s.lengths  # noqa: E731
    idx = np.flatnonzero((seqs.lengths >= 2) & (seqs.lengths <= 12))[:5]
    batch = attribute_events(teacher, seqs, idx, "occlusion", max_events=None)
    assert np.isfinite(batch.attribution).all()
    for b, i in enumerate(idx):
        np.testing.assert_allclose(batch.attribution[batch.segment == b], _loop_occlusion(teacher, seqs, i),
                                   rtol=1e-9, atol=1e-12)


def test_occlusion_bounds_events_and_time(payments):
    _, seqs = payments
    idx = np.flatnonzero(seqs.lengths > 6)[:4]
    batch = attribute_events(_amount_sum, seqs, idx, "occlusion", max_events=3)
    n = seqs.lengths[idx][batch.segment]
    assert (np.isfinite(batch.attribution) == (batch.local >= n - 3)).all()
    amounts = seqs.values["amount"][seqs.batch_positions(idx)[0]]
    ok = np.isfinite(batch.attribution)
    np.testing.assert_allclose(batch.attribution[ok], np.nan_to_num(amounts[ok]), atol=1e-9)
    assert "most recent 3 events" in batch.note
    # A time budget of zero stops after the first chunk of users, and says so.
    stopped = attribute_events(_amount_sum, seqs, np.arange(40), "occlusion", time_budget=0.0, chunk_events=2000)
    stopped_users = np.unique(stopped.segment[np.isfinite(stopped.attribution)])
    assert "time budget" in stopped.note and len(stopped_users) < 40


# ------------------------------------------------------------------ agreement
STATS = ("Select(amount) | RetainBy(channel=online) | Sum", "Select(amount) | RetainBy(country=other) | Count",
         "Select(hour) | Mean")


@pytest.fixture(scope="module")
def tiny(payments):
    data, seqs = payments
    return tiny_explanation(seqs, pd.Series(_amount_sum(seqs), index=seqs.users), statistics=STATS,
                            teacher=_amount_sum)


def test_agreement_by_hand(tiny):
    exp = tiny
    L = exp.literals
    checked = 0
    for i in np.flatnonzero((exp.sequences.lengths <= 60) & exp.result.fires.any(axis=1))[:12]:
        uid = exp.sequences.users[i]
        a = user_attributions(exp, uid, max_events=None)
        events = exp.sequences.events(uid)
        # The statistics the fired rules read, and the events each keeps: by hand from the event table.
        stats = {int(L.output_statistic[L.column[lit.index]]) for k in np.flatnonzero(exp.result.fires[i])
                 for lit in rx.rules.formula_literals(exp.rules[k].formula)}
        kept = {0: events["channel"] == "online", 1: events["country"] == "other", 2: events["hour"] == events["hour"]}
        feeds = np.zeros(len(events), dtype=bool)
        for s in stats:
            feeds |= kept[s].to_numpy()
        weight = np.abs(np.nan_to_num(events["amount"].to_numpy()))  # |total - total without event k|
        assert a.events["feeds_rule"].tolist() == feeds.tolist()
        np.testing.assert_allclose(a.events["attribution"], np.nan_to_num(events["amount"]), atol=1e-9)
        expected = weight[feeds].sum() / weight.sum()
        assert a.agreement == pytest.approx(expected, abs=1e-12) and 0 <= a.agreement <= 1
        assert a.event_share == pytest.approx(feeds.mean())
        assert a.lift == pytest.approx(expected / feeds.mean())
        checked += 1
    assert checked >= 5


def test_rule_event_mask_matches_the_drilldown_rows(tiny):
    exp = tiny
    idx = np.arange(0, exp.sequences.n_users, 3)
    mask = rule_event_mask(exp, idx, counted=False)
    _, segment = exp.sequences.batch_positions(idx)
    L = exp.literals
    for b, i in enumerate(idx):  # the drill-down's own per-user rows, rule by rule
        rows = set()
        for k in np.flatnonzero(exp.result.fires[i]):
            for lit in rx.rules.formula_literals(exp.rules[k].formula):
                c = int(L.column[lit.index])
                rows |= set(feeding_rows(exp, i, int(L.output_statistic[c]), int(L.output_index[c])))
        assert set(np.flatnonzero(mask[segment == b]).tolist()) == rows


def test_a_category_output_counts_the_events_of_its_category(payments):
    data, seqs = payments
    stats = ("Select(merchant_category) | Mean", "Select(channel) | GroupBy(country) | Sum",
             "Select(amount) | RetainBy(channel=online) | Sum")
    exp = tiny_explanation(seqs, pd.Series(_amount_sum(seqs), index=seqs.users), statistics=stats)
    L = exp.literals
    # One rule per statistic, on its literal that holds for about half of the users.
    rate = exp.result.literal_matrix.mean(axis=0)
    stat_of = L.output_statistic[L.column]
    picks = [int(np.flatnonzero(stat_of == s)[np.argmin(np.abs(rate[stat_of == s] - 0.5))]) for s in range(3)]
    exp = exp.with_result(exp.result.with_rules(
        rx.RuleSet.from_formulas([rx.rules.Lit(j, False) for j in picks], [1.0, 2.0, 3.0], literals=L)))
    idx = np.arange(0, seqs.n_users, 2)
    mask = rule_event_mask(exp, idx)
    _, segment = seqs.batch_positions(idx)
    kinds = set()
    for b, i in enumerate(idx):  # by hand from the event table and the output names
        events = seqs.events(seqs.users[i])
        expected = np.zeros(len(events), dtype=bool)
        for k in np.flatnonzero(exp.result.fires[i]):
            for lit in rx.rules.formula_literals(exp.rules[k].formula):
                c = int(L.column[lit.index])
                s = int(L.output_statistic[c])
                name = exp.statistics[s].output_names(seqs)[int(L.output_index[c])]
                keep = np.ones(len(events), dtype=bool)
                parts = name.split(", ") if exp.statistics[s].is_vector(seqs) else []
                for part in parts:  # "merchant_category=gambling", "channel=atm, country=eu"
                    if "=" in part:
                        column, value = part.split("=", 1)
                        keep &= (events[column] == value).to_numpy()
                if s == 2:
                    keep &= (events["channel"] == "online").to_numpy()
                expected |= keep
                kinds.add(s)
        assert mask[segment == b].tolist() == expected.tolist()
    assert kinds == {0, 1, 2}  # every kind of output was checked


def test_agreement_is_nan_without_fired_rules_and_summary_is_batched(tiny):
    exp = tiny
    summary = agreement_summary(exp, n_users=30, max_events=None)
    per = summary.per_user
    assert len(per) == 30 and exp.is_test[[exp.sequences.user_index(u) for u in per.index]].all()
    defined = per["agreement"].dropna()
    assert len(defined) and ((defined >= 0) & (defined <= 1)).all()
    fired = exp.result.fires[[exp.sequences.user_index(u) for u in per.index]].any(axis=1)
    assert per["agreement"].isna().to_numpy()[~fired].all()
    for uid in per.index[:4]:  # the batched figures are the per-user ones
        one = user_attributions(exp, uid, max_events=None)
        assert one.agreement == pytest.approx(per.loc[uid, "agreement"], nan_ok=True)
    assert summary.describe()["n_users"] == 30


# ------------------------------------------------------------------ reaching the teacher
def test_clear_error_when_no_teacher_is_reachable(payments, tmp_path):
    data, seqs = payments
    exp = tiny_explanation(seqs, data.risk)  # built without explain(): no model
    uid = seqs.users[0]
    with pytest.raises(TeacherUnavailable, match="holds no model"):
        _ = exp.user(uid).attributions
    # the same, as explain(None, scores=...) leaves it: the scores, no model
    exp = Explanation(exp.sequences, exp.params, result=exp.result, inputs=JobInputs(None, data.risk))
    with pytest.raises(TeacherUnavailable, match="given the teacher's scores"):
        _ = exp.user(uid).attributions
    path = exp.save(tmp_path / "a.rudi")
    loaded = rx.load(path)
    with pytest.raises(TeacherUnavailable, match="loaded from a file"):
        _ = loaded.user(uid).attributions
    # Passing the model makes it work, also on the loaded one.
    got = loaded.user(uid).attribute(teacher=_amount_sum, max_events=None)
    np.testing.assert_allclose(got.events["attribution"], np.nan_to_num(seqs.events(uid)["amount"]), atol=1e-9)
    with pytest.raises(ValueError, match="needs a PyTorch teacher"):
        loaded.user(uid).attribute("integrated_gradients", teacher=_amount_sum)


def _risk(s: rx.Sequences) -> np.ndarray:
    """A callable teacher over the events: gambling spend and the share of payments abroad (the demo's plant)."""
    gambling = s.codes["merchant_category"] == s.vocabularies["merchant_category"].index("gambling")
    spend = np.bincount(s.event_user, weights=np.where(gambling, np.nan_to_num(s.values["amount"]), 0.0),
                        minlength=s.n_users)
    other = np.bincount(s.event_user, weights=s.codes["country"] == s.vocabularies["country"].index("other"),
                        minlength=s.n_users)
    return np.log1p(np.maximum(spend, 0.0)) + 2.5 * other / np.maximum(s.lengths, 1)


@pytest.mark.slow
def test_explain_keeps_its_teacher_for_attributions(payments):
    _, seqs = payments
    exp = rx.explain(_risk, seqs, n_stats=3, n_rules=6, n_simulations=20, student="lasso", background=False)
    fired = np.flatnonzero(exp.result.fires.any(axis=1) & (seqs.lengths > 3) & (seqs.lengths <= 60))
    uid = seqs.users[fired[0]]
    a = exp.user(uid).attributions
    assert a.method == "occlusion" and len(a.events) == seqs.lengths[fired[0]]
    assert a.score == pytest.approx(exp.teacher_scores[uid], rel=1e-12)
    np.testing.assert_allclose(a.events["attribution"], _loop_occlusion(_risk, seqs, fired[0]), atol=1e-9)
    assert 0 <= a.agreement <= 1 and "agreement" in repr(a)


# ------------------------------------------------------------------ drill-down state
def test_drilldown_state_carries_the_attribution_strip(tiny, payments):
    from rudi_explain.views.payloads import attribution_state, user_detail

    exp = tiny
    i = int(np.flatnonzero(exp.result.fires.any(axis=1) & (exp.sequences.lengths > 70))[0])
    uid = exp.sequences.users[i]
    assert "attributions" not in user_detail(exp, uid)  # opt-in: it asks the model
    state = user_detail(exp, str(uid), max_events=50, attributions=True)["attributions"]
    a = exp.user(uid).attributions
    assert state["available"] and state["method"] == "occlusion" and len(state["values"]) == 50
    amounts = np.nan_to_num(exp.sequences.events(uid)["amount"].to_numpy())
    n = len(amounts)
    for r, v in enumerate(state["values"]):  # only the most recent 64 events are occluded
        assert (v is None) == (r < n - 64)
        if v is not None:
            assert v == pytest.approx(amounts[r], rel=1e-5, abs=1e-9)
    assert state["feeds"] == a.events["feeds_rule"].tolist()[:50]
    assert state["agreement"] == pytest.approx(a.agreement, abs=1e-4)
    data, seqs = payments
    without = attribution_state(tiny_explanation(seqs, data.risk), uid)
    assert without == {"available": False, "reason": without["reason"]} and "holds no model" in without["reason"]


def test_integrated_gradients_with_a_custom_encoding_and_two_logits(payments):
    """Any module: a dict from ``encode``, codes of shape (B, T), two class logits scored as their difference."""
    _, seqs = payments

    class TwoLogits(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            torch.manual_seed(0)
            self.emb = torch.nn.Embedding(12, 3, padding_idx=0)
            self.rnn = torch.nn.GRU(4, 5, batch_first=True)
            self.out = torch.nn.Linear(5, 2)

        def forward(self, codes, x, lengths):
            h, _ = self.rnn(torch.cat([self.emb(codes), torch.tanh(x)], dim=-1))
            return self.out(h[torch.arange(len(lengths)), lengths - 1])

    def encode(s, idx):
        cat, num, lengths = encode_padded(s, idx, 8, categorical=["merchant_category"], numerical=["amount"])
        return {"codes": cat[..., 0], "x": num[..., :1] / 100.0, "lengths": lengths}

    model = TwoLogits().eval()
    model.max_len = 8  # the encoding keeps the last 8 events: attributions say where they sit
    teacher = as_teacher(model, encode=encode)
    idx = np.arange(12)
    batch = attribute_events(teacher, seqs, idx, "integrated_gradients")
    score = teacher.score(seqs.subset(idx))
    with torch.no_grad():
        codes, x, lengths = encode(seqs, idx).values()
        out = model(torch.zeros_like(codes), torch.zeros_like(x), lengths)
        reference = (out[:, 1] - out[:, 0]).double().numpy()
    total = np.bincount(batch.segment, weights=np.nan_to_num(batch.attribution), minlength=len(idx))
    np.testing.assert_allclose(batch.score, score, rtol=1e-5, atol=1e-6)
    assert (np.abs(total - (score - reference)) <= 0.02 * np.abs(score - reference) + 1e-3).all()
    assert set(batch.columns) == {"input 1[0]", "embedding 0"}
    n = seqs.lengths[idx][batch.segment]
    assert (np.isfinite(batch.attribution) == (batch.local >= n - np.minimum(n, 8))).all()


def test_a_failing_teacher_names_the_real_users(payments):
    from rudi_explain.teachers.adapters import TeacherError

    _, seqs = payments

    def fails_on_short(s):
        if (s.lengths < 3).any():
            raise RuntimeError("too short")
        return s.lengths.astype(float)

    short = int(np.flatnonzero(seqs.lengths == 3)[0])
    with pytest.raises(TeacherError, match=f"during occlusion of user '{seqs.users[short]}'") as caught:
        attribute_events(fails_on_short, seqs, [short], "occlusion")
    assert isinstance(caught.value.__cause__, RuntimeError)
