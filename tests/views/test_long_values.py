"""A category value of 20,000 characters: every view shows it shortened and the report stays its usual size."""

import json
import re

import numpy as np
import pytest
from tiny import tiny_explanation

import rudi_explain as rx
from rudi_explain.exceptions import InputError
from rudi_explain.views import payloads as ws
from rudi_explain.views.report import report_html
from rudi_explain.views.static_view import static_html
from rudi_explain.views.text import (
    CELL_LIMIT,
    FULL_LIMIT,
    FULL_VALUES_KEY,
    TEXT_LIMIT,
    FullValues,
    shorten,
    shorten_words,
)

# markup at its start: shortening must not undo the escaping
LONG = "<i>" + "g" * 19_997
SHORT = "groceries_x"


def _explanation(name: str):
    """300 demo users whose most common merchant category is called ``name``; scores: its share of events."""
    demo = rx.datasets.make_payments(300, random_state=3)
    ev = demo.events.copy()
    mc = ev["merchant_category"].astype(str)
    ev["merchant_category"] = mc.where(mc != mc.value_counts().index[0], name)
    seqs = rx.Sequences(ev, user="user_id", time="ts", categorical=["card_type", "channel", "merchant_category",
                                                                    "country"], numerical=["amount", "hour"])
    share = ev.assign(hit=ev["merchant_category"] == name).groupby("user_id")["hit"].mean()
    return tiny_explanation(seqs, share, statistics=("Select(merchant_category) | Mean", "Select(amount) | Mean"))


@pytest.fixture(scope="module")
def long_exp():
    return _explanation(LONG)


@pytest.fixture(scope="module")
def reports(long_exp):
    return report_html(_explanation(SHORT)), report_html(long_exp)


def _strings(value, key=None):
    """Every string value of a JSON payload, with the key it sits under (dict keys are not values)."""
    if isinstance(value, str):
        yield key, value
    elif isinstance(value, dict):
        for k, v in value.items():
            yield from _strings(v, k)
    elif isinstance(value, list):
        for v in value:
            yield from _strings(v, key)


def _embedded(page: str, element: str):
    text = re.search(f'<script type="application/json" id="{element}">(.*?)</script>', page, re.S).group(1)
    return json.loads(text)


def test_the_rules_use_the_long_value(long_exp):
    assert any(LONG in rule.text for rule in long_exp.rules)
    users = long_exp.sequences.users[:20]
    assert any((long_exp.user(u).events["merchant_category"].astype(str) == LONG).any() for u in users)


def test_the_report_stays_near_its_usual_size(reports):
    short, long = reports
    assert len(long) < 3 * len(short), (len(short), len(long))
    # the whole value is there for its click (in the results' full_values) once per way it is written
    # (the value, "merchant_category=value", "[merchant_category=value]"), not once per rule, user or event
    assert LONG not in long and 1 <= long.count("g" * 19_997) <= 4


def test_every_shortened_form_maps_to_its_whole_value(reports, long_exp):
    state, users = _embedded(reports[1], "rx-state"), _embedded(reports[1], "rx-users")
    full = state["results"][FULL_VALUES_KEY]
    forms = {t for _, t in _strings([state["results"], users]) if LONG[:20] in t}
    shown = {f for f in full if any(f in t for t in forms)}
    assert shown and all(full[f] in (LONG, None) or LONG in full[f] for f in shown)
    word = [f for f in shown if full[f] == LONG]
    assert word, "the value itself (not only a sentence holding it) opens whole"
    # the drill-down built on request (the widget's path) carries its own, the event cells' among them
    detail = ws.user_detail(long_exp, next(u for u in long_exp.sequences.users[:50]
                                           if (long_exp.user(u).events["merchant_category"] == LONG).any()))
    assert LONG in detail[FULL_VALUES_KEY].values()
    cell = shorten(LONG, CELL_LIMIT)
    assert detail[FULL_VALUES_KEY][cell] == LONG and any(cell in row for row in detail["events"])


def test_full_values_are_bounded():
    full = FullValues(budget=150_000)
    full.add("a…b", "a" + "x" * 300_000 + "b")
    assert len(full.as_dict()["a…b"]) < FULL_LIMIT + 100 and "of 300,002 characters" in full.as_dict()["a…b"]
    full.add("c…d", "c" + "y" * 200_000 + "d")  # past the budget: a note in the front end, not the value
    assert full.as_dict()["c…d"] is None
    full.add("a…b", "a" + "z" * 10 + "b")  # two values, one form: neither can be told from it
    assert full.as_dict()["a…b"] is None


def test_no_payload_string_is_longer_than_the_limit(reports, long_exp):
    page = reports[1]
    state, users = _embedded(page, "rx-state"), _embedded(page, "rx-users")
    assert users, "the report embeds users"
    for key, text in _strings([{k: v for k, v in state["results"].items() if k != FULL_VALUES_KEY}, users]):
        # user ids ("id") stay whole: the front end sends them back; none is long here
        assert len(text) <= TEXT_LIMIT, (key, len(text))
    # the shortened value is still recognisable in the rules and literals, with its threshold at the end
    texts = [c["text"] for c in state["results"]["rules"]]
    assert all(t.startswith("share of events with merchant_category = <i>ggg") and "…" in t and t.endswith("%")
               for t in texts)
    # event cells are cut shorter still
    for detail in users.values():
        for row in detail["events"]:
            assert all(not isinstance(v, str) or len(v) <= CELL_LIMIT for v in row)
    assert any("…" in v for d in users.values() for row in d["events"] for v in row if isinstance(v, str))
    # the drill-down built on request (the widget's path) is shortened too
    detail = ws.user_detail(long_exp, long_exp.sequences.users[0])
    del detail[FULL_VALUES_KEY]
    assert max(len(t) for _, t in _strings(detail)) <= TEXT_LIMIT


def test_the_markup_in_the_value_stays_escaped(reports, long_exp):
    page = reports[1]
    assert "<i>ggg" not in page  # in JSON as \u003ci\u003e, in HTML as &lt;i&gt;
    html = static_html(long_exp)
    assert "<i>" not in html and "&lt;i&gt;ggg" in html


def test_the_static_view_shows_the_value_shortened(long_exp):
    html = static_html(long_exp)
    assert "g" * 1000 not in html and "…" in html
    assert len(html) < 10_000


@pytest.mark.slow
def test_a_report_over_the_bound_embeds_fewer_users_and_says_so(long_exp, reports):
    full = reports[1]
    bound = len(full) - 1
    page = report_html(long_exp, max_chars=bound)
    assert len(page) <= bound and "Reduced to keep the report under" in page
    with pytest.raises(InputError, match="more than"):
        report_html(long_exp, max_chars=100_000)


def test_shorten_keeps_both_ends():
    assert shorten("abc") == "abc"
    cut = shorten("a" * 50 + "b" * 50, 20)
    assert len(cut) == 20 and cut.startswith("a") and cut.endswith("b") and "…" in cut
    sentence = shorten_words("x = " + "v" * 10_000 + " is more than 3%")
    assert sentence.startswith("x = vvv") and sentence.endswith(" is more than 3%") and len(sentence) <= 100
    assert len(shorten_words("word " * 1000)) == TEXT_LIMIT
    assert np.all([shorten(s, 10) == s for s in ("", "short", "0123456789")])
