"""Bad input at the edges (issue 13): hostile text in reports, inf, odd user ids, id-like columns."""

from __future__ import annotations

import json
import warnings

import numpy as np
import pandas as pd
import pytest
from html_parts import ReportParts
from tiny import tiny_explanation  # noqa: E402

import rudi_explain as rx
from rudi_explain.views.report import report_html

COMMENT = "<!-- x"
ATTACK = "</script><script>alert(1)</script><!--"


def payments(n_users: int = 150, random_state: int = 3) -> rx.datasets.DemoData:
    return rx.datasets.make_payments(n_users, random_state=random_state)


# ------------------------------------------------------------ item 3: report
def test_report_with_comment_openers_in_the_data_still_parses():
    demo = payments()
    events = demo.events.copy()
    events["channel"] = events["channel"].cat.rename_categories({"online": COMMENT, "atm": ATTACK})
    events["user_id"] = events["user_id"].map(lambda u: u + "<!--")
    risk = demo.risk.rename(index=lambda u: u + "<!--")
    seqs = rx.Sequences(events, user="user_id", time="ts")
    exp = tiny_explanation(seqs, risk, statistics=("Select(channel) | Mean", "Select(amount) | Mean"))
    text = report_html(exp, n_users=10)
    parser = ReportParts()
    parser.feed(text)
    for key in ("rx-state", "rx-users"):
        raw = parser.scripts[key]
        # The HTML parser's escaped states start at these; none may occur in script data.
        for marker in ("<!--", "<script", "</script", "</"):
            assert marker not in raw.lower(), f"{marker!r} in {key}"
    state = json.loads(parser.scripts["rx-state"])  # the page's JSON.parse would fail on `<\!--`
    users = json.loads(parser.scripts["rx-users"])
    assert all(k.endswith("<!--") for k in users)
    # The strings come back exactly: categories in the drill-down, ids as keys.
    shown = {v for d in users.values() for row in d["events"] for v in row if isinstance(v, str)}
    assert COMMENT in shown or ATTACK in shown
    assert state["results"]["summary"]["n_users"] == 150


def events_frame(n_users: int = 30, per_user: int = 4, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    n = n_users * per_user
    return pd.DataFrame({"user_id": np.repeat([f"u{i:03d}" for i in range(n_users)], per_user),
                         "ts": np.tile(np.arange(per_user), n_users),
                         "channel": rng.choice(["web", "shop", "atm"], n),
                         "amount": rng.gamma(2.0, 20.0, n)})


# ------------------------------------------------------------ item 4: inf refused at the boundary
def test_infinite_values_are_refused_naming_column_and_users():
    events = events_frame()
    events.loc[[5, 6, 41], "amount"] = [np.inf, -np.inf, np.inf]
    with pytest.raises(ValueError, match=r"numerical column 'amount' has 3 infinite values, for users "
                                         r"'u001', 'u010'"):
        rx.Sequences(events)
    # explain() refuses before any work: no search, no thread.
    scores = pd.Series(np.arange(30.0), index=[f"u{i:03d}" for i in range(30)])
    with pytest.raises(ValueError, match="'amount' has 3 infinite values"):
        rx.explain(None, events, scores=scores, background="thread")
    events["amount"] = events["amount"].replace([np.inf, -np.inf], np.nan)  # NaN (missing) is fine
    assert np.isnan(rx.Sequences(events).values["amount"]).sum() == 3


# ------------------------------------------------------------ item 5: user ids
def test_whole_float_ids_become_integers_and_work_end_to_end(tmp_path):
    demo = payments()
    codes = {u: float(i * 7) for i, u in enumerate(sorted(demo.risk.index))}
    events = demo.events.assign(user_id=demo.events["user_id"].map(codes))
    seqs = rx.Sequences(events, user="user_id", time="ts")
    assert seqs.users.dtype == np.int64 and seqs.users[1] == 7
    exp = tiny_explanation(seqs, demo.risk.rename(index=lambda u: int(codes[u])))
    html = report_html(exp, n_users=8)  # the old code raised KeyError: "user '182.5' ..."
    assert "rx-users" in html
    from rudi_explain.views import payloads as ws

    detail = ws.user_detail(exp, ws.resolve_user(exp, "7"))
    assert detail["id"] in (7, "7")
    back = rx.load(exp.save(tmp_path / "ints.rudi"))
    assert back.sequences.users.tolist() == seqs.users.tolist()


@pytest.mark.parametrize("ids, kind", [
    ([1.5, 1.5, 2.0, 2.0], "fractional"),
    (pd.to_datetime(["2020-01-01", "2020-01-01", "2020-01-02", "2020-01-02"]), "datetime64"),
    ([b"a", b"a", b"b", b"b"], "bytes"),
    ([(1, 2), (1, 2), (3, 4), (3, 4)], "tuple"),
    ([True, True, False, False], "boolean"),
])
def test_ids_that_are_not_text_or_whole_numbers_are_refused(ids, kind, tmp_path):
    events = pd.DataFrame({"user_id": ids, "ts": [0, 1, 0, 1], "amount": [1.0, 2.0, 3.0, 4.0]})
    with pytest.raises(TypeError, match=rf"user column 'user_id' holds {kind}.* ids such as .*text or whole numbers"):
        rx.Sequences(events)
    assert not list(tmp_path.iterdir())


# ------------------------------------------------------------ item 2: id-like and huge categorical columns
def test_a_timestamp_column_read_as_text_is_refused_as_time_like():
    n = 3000
    events = pd.DataFrame({"user_id": np.arange(n) % 50, "stamp": pd.date_range("2024-01-01", periods=n, freq="min")
                           .astype(str), "amount": np.arange(n, dtype=float)})
    with pytest.raises(ValueError, match=r"categorical column 'stamp' has 3,000 distinct values in 3,000 events "
                                         r".*looks time-like.*time column"):
        rx.Sequences(events, time=None)


def test_an_id_column_is_refused_as_id_like():
    n = 2500
    events = pd.DataFrame({"user_id": np.arange(n) % 50, "order": [f"ord-{i:05d}x" for i in range(n)],
                           "amount": np.ones(n)})
    with pytest.raises(ValueError, match=r"categorical column 'order' .* looks id-like"):
        rx.Sequences(events, time=None)
    assert rx.Sequences(events, time=None, max_categories=None).categories("order")[0] == "ord-00000x"


def test_a_numeric_column_spoiled_by_one_cell_warns_and_names_it():
    # Round three: the column stays numerical, the bad cell missing (tests/data/test_bad_input_data.py).
    n = 3000
    amount = [f"{i * 0.25:.2f}" for i in range(n)]
    amount[1234] = "12,5"
    events = pd.DataFrame({"user_id": np.arange(n) % 50, "amount": amount, "ts": np.arange(n)})
    with pytest.warns(UserWarning, match=r"column 'amount' has a non-numeric value '12,5' \(row 1234, user 34\), "
                                         r"read as missing"):
        assert rx.Sequences(events).numerical == ["amount"]
    # In 40 cells one bad cell is more than 1 %: refused, naming it.
    small = pd.DataFrame({"user_id": np.arange(40) % 4, "x": [str(i) for i in range(39)] + ["n/a?"]})
    with pytest.raises(ValueError, match=r"'x' has a non-numeric value 'n/a\?' \(row 39, user 3\) in 40 cells"):
        rx.Sequences(small, time=None)


def test_many_categories_are_lumped_by_frequency_against_a_reference():
    rng = np.random.default_rng(1)
    n, n_cat, bound = 20_000, 1500, 1000
    # Zipf-like frequencies: the rarest categories are few events each.
    weights = 1.0 / np.arange(1, n_cat + 1)
    values = rng.choice(n_cat, n, p=weights / weights.sum())
    events = pd.DataFrame({"user_id": np.arange(n) % 400, "merchant": [f"m{v:04d}" for v in values],
                           "amount": np.ones(n)})
    with pytest.warns(UserWarning, match=r"'merchant' has 1,\d{3} categories, more than max_categories=1,000"):
        seqs = rx.Sequences(events, time=None, max_categories=bound)
    vocab = seqs.categories("merchant")
    assert len(vocab) == bound and rx.data.sequences.OTHER_CATEGORY in vocab
    # Reference: pandas counts, most frequent kept (ties in sorted order), the rest become "<other>".
    counts = events["merchant"].value_counts()
    order = sorted(counts.index, key=lambda v: (-counts[v], v))
    kept = set(order[: bound - 1])
    expected = events["merchant"].where(events["merchant"].isin(kept), rx.data.sequences.OTHER_CATEGORY)
    decoded = seqs.to_frame().set_index(seqs.input_row).sort_index()["merchant"]
    assert (decoded.to_numpy() == expected.to_numpy()).all()
    # New data: a lumped or unknown merchant joins "<other>", as in training.
    new = rx.Sequences(events.assign(merchant="never-seen"), time=None, vocabularies=seqs.vocabularies)
    assert set(np.asarray(vocab)[new.codes["merchant"]]) == {rx.data.sequences.OTHER_CATEGORY}


# ------------------------------------------------------------ item 11: small ones at the boundary
def test_small_boundary_cases_name_the_column_or_value():
    events = events_frame()
    with pytest.raises(ValueError, match=r"column names repeat in the data: \['channel'\]"):
        rx.Sequences(pd.concat([events, events[["channel"]]], axis=1))
    cells = events.assign(channel=events["channel"].astype(object))
    cells.at[7, "channel"] = {"a": 1}
    with pytest.raises(TypeError, match=r"categorical column 'channel' holds a dict at row 7"):
        rx.Sequences(cells)
    times = events.assign(ts=pd.Series(["2024-01-01"] * len(events), dtype=object))
    times.at[9, "ts"] = "not-a-date"
    with pytest.raises(TypeError, match=r"time column 'ts' .* value 'not-a-date' at row 9"):
        rx.Sequences(times)
    na = events.assign(channel=events["channel"].astype(object))
    na.at[1, "channel"], na.at[2, "channel"] = "<NA>", None
    with pytest.raises(ValueError, match=r"'channel' holds the text '<NA>' as well as missing values"):
        rx.Sequences(na)


# ------------------------------------------------------------ item 9: figures that cannot be trusted
@pytest.mark.slow
def test_fidelity_interval_covers_the_population_value():
    from rudi_explain.metrics import fidelity, fidelity_interval

    def draw(n, rng):
        t = rng.normal(size=n)
        s = np.round(t + rng.normal(scale=0.8, size=n), 1)  # ties in the student too
        return t, s

    population = fidelity(*draw(60_000, np.random.default_rng(123)))
    covered, widths = [], []
    for seed in range(60):
        t, s = draw(200, np.random.default_rng(seed))
        lo, hi = fidelity_interval(t, s, random_state=seed)
        assert lo <= fidelity(t, s) <= hi
        covered.append(lo <= population <= hi)
        widths.append(hi - lo)
    assert np.mean(covered) >= 0.85, f"95% intervals covered the population value {np.mean(covered):.0%} of the time"
    assert 0.02 < np.median(widths) < 0.2
    # One held-out pair says almost nothing: the interval says so.
    lo, hi = fidelity_interval([0.0, 1.0], [0.0, 1.0])
    assert hi == 1.0 and lo < 0.3


def test_report_warns_when_held_out_users_are_few():
    demo = payments(150)
    exp = tiny_explanation(demo.sequences(), demo.risk, demo.labels, test_size=0.1)
    r = exp.report()
    assert r["n_test"] == 15 and r["fidelity_test_ci"][0] <= r["fidelity_test"] <= r["fidelity_test_ci"][1]
    assert any("only 15 held-out users" in w for w in r["warnings"])
    from rudi_explain.views import payloads as ws

    summary = ws.summary(exp)
    assert summary["warnings"] == r["warnings"] and len(summary["fidelity_test_ci"]) == 2
    big = tiny_explanation(payments(400).sequences(), payments(400).risk, test_size=0.3)
    assert big.report()["warnings"] == []


def test_report_warns_when_scores_are_mostly_tied():
    demo = payments(300)
    risk = demo.risk.where(demo.risk.rank(ascending=False) <= 6, 0.0)  # 98% tied
    r = tiny_explanation(demo.sequences(), risk, test_size=0.5).report()
    assert r["fidelity_constant"] > 0.9
    assert any("tied at 0" in w and f"constant score already reaches fidelity {r['fidelity_constant']:.3f}" in w
               for w in r["warnings"])
    nearly = tiny_explanation(demo.sequences(), 1.0 + demo.risk * 1e-13, test_size=0.5).report()
    assert any("rounding noise" in w for w in nearly["warnings"])


def test_scores_of_any_size_give_the_same_rules_in_their_own_units():
    from rudi_explain.explanation.pipeline import _standardize
    from rudi_explain.explanation.student_stage import in_teacher_units as _in_teacher_units

    demo = payments(150)
    y = demo.risk.to_numpy()
    for factor in (1e300, 1e-300, 1.0):
        z, a, b = _standardize(y * factor)
        assert np.isfinite(z).all() and abs(z.mean()) < 1e-9 and abs(z.std() - 1) < 1e-9
        np.testing.assert_allclose(a * z + b, y * factor, rtol=1e-9)
    exp = tiny_explanation(demo.sequences(), demo.risk)
    rules = exp.rules
    z, a, b = _standardize(y * 1e300)
    big = _in_teacher_units(rules, a, b)
    Z = exp.result.literal_matrix
    np.testing.assert_allclose(big.score(Z), a * rules.score(Z) + b, rtol=1e-9)


@pytest.mark.slow
def test_explain_trains_on_standardized_scores():
    kwargs = dict(background=False, n_stats=2, n_rules=4, n_simulations=10, student="lasso",
                  progress=lambda e: None)
    demo = payments(150)
    plain = rx.explain(None, demo.events, scores=demo.risk, **kwargs)
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)  # no overflow anywhere
        huge = rx.explain(None, demo.events, scores=demo.risk * 1e300, **kwargs)
    assert [str(s) for s in huge.statistics] == [str(s) for s in plain.statistics]
    assert huge.report()["fidelity_test"] == pytest.approx(plain.report()["fidelity_test"], abs=0.02)
    np.testing.assert_allclose(huge.student_scores / 1e300, plain.student_scores, rtol=1e-3, atol=1e-9)


# ------------------------------------------------------------ item 10: labels and scores by user id
def test_bare_arrays_are_refused_unless_said_to_be_in_users_order():
    from rudi_explain.teachers.adapters import as_teacher, given_scores

    demo = payments(150)
    natural = demo.events.drop_duplicates("user_id")["user_id"]
    scores = demo.risk[natural].to_numpy()  # natural order == sorted here; the check cannot know
    labels = demo.labels.to_numpy()
    with pytest.raises(ValueError, match=r"the given scores are a bare ndarray without user ids.*in_users_order=True"):
        rx.explain(None, demo.events, scores=scores, background="thread")
    with pytest.raises(ValueError, match=r"the labels are a bare ndarray .*Series indexed by user id"):
        rx.explain(None, demo.events, scores=demo.risk, labels=labels, background="thread")
    seqs = demo.sequences()
    with pytest.raises(ValueError, match="bare ndarray"):
        as_teacher(scores).score(seqs)
    np.testing.assert_array_equal(given_scores(scores, seqs, in_users_order=True), demo.risk.to_numpy())
    np.testing.assert_array_equal(as_teacher(scores, in_users_order=True).score(seqs), demo.risk.to_numpy())
    # Series in any order are aligned by id.
    shuffled = demo.labels.sample(frac=1.0, random_state=0)
    from rudi_explain.explanation.pipeline import _labels_array

    np.testing.assert_array_equal(_labels_array(shuffled, seqs), demo.labels.reindex(seqs.users).to_numpy())


def test_auc_says_which_users_it_covers():
    demo = payments(200)
    r = tiny_explanation(demo.sequences(), demo.risk, demo.labels).report()
    assert r["auc_users"] == "held-out" and r["auc_teacher"] is not None
    assert tiny_explanation(demo.sequences(), demo.risk).report()["auc_users"] is None


# ------------------------------------------------------------ item 8: structured outputs in the drill-down
def test_drill_down_highlights_the_group_even_when_its_name_has_commas():
    from types import SimpleNamespace

    from rudi_explain.statistics import Statistic
    from rudi_explain.views import payloads as ws

    demo = payments(120)
    rng = np.random.default_rng(5)
    cities = np.array(["New York, NY", "Paris", "a=b, c=d"])
    events = demo.events.assign(city=rng.choice(cities, len(demo.events)))
    seqs = rx.Sequences(events, user="user_id", time="ts")
    # feeding_rows reads only the sequences and the statistics (Literals.fit would also
    # describe the outputs, which another module does not yet do for such names).
    exp = SimpleNamespace(sequences=seqs, statistics=[Statistic.parse("Select(amount) | GroupBy(city) | Sum"),
                                                      Statistic.parse("Select(channel) | GroupBy(city) | Mean")])
    for s, stat in enumerate(exp.statistics):
        names = stat.output_names(seqs)
        q = len(seqs.vocabularies["city"])
        for uid in seqs.users[:10]:
            i = seqs.user_index(uid)
            mine = seqs.events(uid)
            for k, name in enumerate(names):
                city = seqs.vocabularies["city"][k % q]
                expected = np.flatnonzero(mine["city"].to_numpy() == city).tolist()  # pandas reference
                assert ws.feeding_rows(exp, i, s, k) == expected
                assert ws.feeding_rows(exp, i, s, name) == expected, name


# ------------------------------------------------------------ item 11: parsing long texts is linear
def test_parsing_a_long_statistic_text_copies_none_of_it():
    # Counted, not timed: the tokenizer walks the text from an offset with one compiled pattern, so
    # it reads each character once; one that sliced off the rest of the text per token copied
    # length x tokens characters. A text at the length bound, in a str that counts what is copied.
    from rudi_explain.statistics.bounds import MAX_STATISTIC_CHARACTERS
    from rudi_explain.statistics.text import parse_operators

    class Counted(str):
        copied = 0

        def __getitem__(self, key):
            out = str.__getitem__(self, key)
            Counted.copied += len(out)
            return Counted(out)

    value = "x" * (MAX_STATISTIC_CHARACTERS - 1_000)
    text = Counted("Select(amount)" + " | Abs" * 29 + f" | RetainBy(card_type='{value}') | Sum")
    assert len(text) <= MAX_STATISTIC_CHARACTERS
    ops = parse_operators(text)
    assert len(ops) == 32 and ops[-2].value == value
    assert Counted.copied <= len(text), Counted.copied  # at most one pass's worth
    with pytest.raises(ValueError, match=r"characters\)") as err:
        parse_operators("Select(amount)" + " | Top(5)" * 1000 + " | ?")
    assert len(str(err.value)) < 400  # the message quotes the start of the text, not all of it


def test_invalid_student_params_fail_before_any_work(monkeypatch):
    import rudi_explain.explanation.search_stage as explanation  # where the job starts the search

    def no_search(*args, **kwargs):
        raise AssertionError("the search started")

    monkeypatch.setattr(explanation, "StatisticsSearch", no_search)
    demo = payments()
    with pytest.raises(ValueError, match=r"student_params \{'epochs': -3\} do not suit the 'gsnln' student: epochs"):
        rx.explain(None, demo.events, scores=demo.risk, student_params={"epochs": -3}, background="thread")
    with pytest.raises(ValueError, match="student must be one of"):
        rx.explain(None, demo.events, scores=demo.risk, student="forest", background="thread")


@pytest.mark.slow
def test_notes_of_a_scorecard_near_the_float_limits_write_its_own_points():
    # Scores near the float limits are fitted divided by a power of two and put back after. The notes were
    # left with the divided numbers: "points +0.026 ... (-0.105)" beside a band of +7.1e298 points.
    from rudi_explain.rules.values import points_text

    demo = rx.datasets.make_payments(1500, random_state=0)
    exp = rx.explain(None, demo.events, scores=demo.risk * 1e300, background=False, progress=False)
    mean = float(exp.teacher_scores.to_numpy()[~np.asarray(exp.is_test)].mean())
    noted = [b for c in exp.scorecard.cards for b in (*c.bands, c.undefined) if b is not None and b.note]
    assert noted  # this case has one (measured: one band)
    for b in noted:
        assert b.note.startswith(f"points {points_text(b.points)} though"), (b.points, b.note)
        assert f"the average ({points_text(b.teacher - mean)})" in b.note, (b.teacher - mean, b.note)
