"""The Scorecard comes first (issue 26, item 6), in Chromium, on the standalone report (no kernel).

The report opens on the Scorecard tab, the first tab; each card's rows on the page are ``exp.scorecard``'s
card rows (``Card.rows()``: the text form's labels, users, teacher; points as ``points_text`` writes them) and every row has its step in
the card's chart; the interaction rules follow with their points, as ``print(exp.scorecard)`` writes
them. A user's view shows their band on each card (a per-user loop over the band edges) and a sum that
adds up to the rules' score. A category value holding HTML is shown as text, never run.
"""

from __future__ import annotations

import math
import re

import pytest
from test_widget_progress_page import _with_state
from tiny import tiny_explanation
from views.test_scorecard_view import PROBE, STATS, interacting_explanation, linear_stand_in, rows_written

import rudi_explain as rx
from rudi_explain.explanation.summary import choice_text
from rudi_explain.views import scorecard_view as sv
from rudi_explain.views.report import report_html
from rudi_explain.views.text import TEXT_LIMIT, shorten_words


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    exp = interacting_explanation(1, n_users=160)
    path = tmp_path_factory.mktemp("scorecard") / "report.html"
    path.write_text(report_html(exp, n_users=4), encoding="utf-8")
    return path, exp


def _band(card, v: float) -> int:
    if math.isnan(v):
        return -1 if card.undefined is not None else 0
    return 0 if card.linear is not None else sum(v > e for e in card.edges)


def test_the_scorecard_is_the_first_tab_and_matches_the_scorecard(chromium, report, shots):
    path, exp = report
    sc = exp.scorecard
    page = chromium.new_page(viewport={"width": 1000, "height": 900})
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.set_default_timeout(10_000)
    try:
        page.goto(path.as_uri())
        page.locator("#rx-app[data-ready='1'] .rx-scorecard").wait_for(timeout=15_000)
        tabs = page.locator(".rx-tab")
        assert tabs.first.get_attribute("data-tab") == "scorecard"
        assert tabs.first.get_attribute("aria-selected") == "true"
        assert page.locator(".rx-panel").get_attribute("data-tab") == "scorecard"
        assert page.locator(".rx-sc-headline").inner_text() == str(sc).splitlines()[0]

        cards = page.locator(".rx-sc-card")
        assert cards.count() == len(sc.cards) > 0
        for k, card in enumerate(sc.cards):
            block = cards.nth(k)
            assert block.locator(".rx-sc-name").inner_text() == card.name
            rows = block.locator(".rx-sc-table tbody tr").evaluate_all(
                "trs => trs.map(tr => [...tr.querySelectorAll('td')].map(td => td.textContent))")
            # Card.rows() with the points as every view writes them (points_text)
            assert [tuple(r) for r in rows] == [row[:4] for row in rows_written(card)], card.name
            # one step per band in the chart, at the band's points (the line's y is the chart's, the text the row's)
            if card.linear is None:
                steps = block.locator("line.rx-sc-step").evaluate_all("ls => ls.map(l => l.dataset.points)")
                assert steps == [row[1] for row in rows_written(card)], card.name
                # the undefined band's level is drawn apart from the value bands' steps
                assert block.locator("path.rx-sc-undefined").count() == (card.undefined is not None)
            notes = block.locator(".rx-sc-note").all_inner_texts()
            assert notes == [f"note on '{r[0]}': {r[4]}" for r in card.rows() if r[4]]
        inter = page.locator(".rx-sc-interactions tbody tr").evaluate_all(
            "trs => trs.map(tr => [...tr.querySelectorAll('td')].slice(0, 2).map(td => td.textContent))")
        text_lines = [re.sub(r"\s+", " ", x).strip() for x in str(sc).splitlines()]
        assert len(inter) == len(sc.interactions) > 0
        for (points, rule), r in zip(inter, sc.interactions):
            assert rule == r.text and f"{points} {rule}" in text_lines
        shots(page, "scorecard-first", top=page.locator(".rx-scorecard"))

        # a user's band on each card, and the sum
        page.locator(".rx-tab[data-tab='user']").click()
        link = page.locator(".rx-top-users .rx-user-link").first
        uid = link.get_attribute("data-user")
        link.click()
        page.locator(".rx-user-scorecard").wait_for()
        i = [str(u) for u in exp.sequences.users].index(uid)
        bands = page.locator(".rx-user-sc tbody tr[data-card]").evaluate_all(
            "trs => trs.map(tr => [Number(tr.dataset.band), tr.querySelector('.rx-sc-label').textContent])")
        V = exp.result.values
        for card, (band, label) in zip(sc.cards, bands):
            want = _band(card, float(V[i, card.column]))
            assert band == want, (card.name, band, want)
            labels = dict(zip(([-1] if card.undefined is not None else []) + list(range(card.n_bands)),
                              [r[0] for r in card.rows()]))
            assert label == labels[want]
        check = page.locator(".rx-sum-check")
        assert check.get_attribute("data-adds-up") == "true" and check.inner_text().endswith("✓")
        assert not errors, errors
    finally:
        page.close()


def test_the_scorecard_says_which_form_was_kept(chromium, tmp_path):
    """The sentence naming the kept form (and each form's validation fidelity) shows under the headline, as
    ``print(exp)`` writes it, before the first card."""
    demo = rx.datasets.make_payments(800, random_state=1)
    exp = rx.explain(None, demo.sequences(), scores=demo.risk, statistics=STATS, search=False, background=False,
                     random_state=1, progress=False)
    sentence = choice_text(exp.result)
    assert sentence.startswith("Chosen on ") and sentence in str(exp)
    path = tmp_path / "choice.html"
    path.write_text(report_html(exp, n_users=2), encoding="utf-8")
    page = chromium.new_page(viewport={"width": 1000, "height": 900})
    try:
        page.goto(path.as_uri())
        page.locator("#rx-app[data-ready='1'] .rx-scorecard").wait_for(timeout=15_000)
        choice = page.locator(".rx-sc-choice")
        assert choice.count() == 1
        sentences = exp.result.scorecard_choice.sentences()
        assert " ".join(sentences) == sentence
        if all(len(s) <= TEXT_LIMIT for s in sentences):  # each sentence whole, however long they are together
            assert choice.inner_text() == sentence
        else:  # a sentence past the limit is shortened as every long text of the payload is; a click opens it
            long = next(s for s in sentences if len(s) > TEXT_LIMIT)
            link = choice.locator(".rx-full")
            assert link.inner_text() == shorten_words(long)
            link.click()
            assert choice.locator(".rx-full-value").text_content() == long
        # after the headline, before the first card (DOCUMENT_POSITION_FOLLOWING = 4)
        assert page.evaluate("""() => {
            const [h, c, card] = ['.rx-sc-headline', '.rx-sc-choice', '.rx-sc-card'].map(s => document.querySelector(s));
            return Boolean(h.compareDocumentPosition(c) & 4) && Boolean(c.compareDocumentPosition(card) & 4);
        }""")
    finally:
        page.close()


def test_html_in_a_category_value_is_text(chromium, tmp_path):
    """The card names of a category value holding HTML are shown as that text; no image is made."""
    demo = rx.datasets.make_payments(150, random_state=4)
    events = demo.events.copy()
    events["channel"] = PROBE + events["channel"].astype(str)
    seqs = rx.Sequences(events, user="user_id", time="ts", categorical=demo.categorical, numerical=demo.numerical,
                        units=demo.units)
    exp = tiny_explanation(seqs, demo.risk, statistics=("Select(channel) | Mean", "Select(amount) | Count"),
                           random_state=4)
    path = tmp_path / "probe.html"
    path.write_text(report_html(exp, n_users=2), encoding="utf-8")
    page = chromium.new_page(viewport={"width": 1000, "height": 900})
    dialogs: list[str] = []
    page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    try:
        page.goto(path.as_uri())
        page.locator("#rx-app[data-ready='1'] .rx-scorecard").wait_for(timeout=15_000)
        names = page.locator(".rx-sc-name").all_inner_texts()
        assert any(PROBE in n for n in names), names
        assert page.evaluate("() => document.querySelectorAll('#rx-app img').length") == 0 and not dialogs
    finally:
        page.close()


def test_a_linear_card_draws_its_line(chromium, tmp_path):
    """A linear card: its "+x per unit, from lo to hi" row and a line chart from lo to hi."""
    exp = interacting_explanation(7, n_users=150)
    state = sv.scorecard_state(linear_stand_in())
    path = tmp_path / "linear.html"
    path.write_text(_with_state(report_html(exp, n_users=2), lambda s: s["results"].update(scorecard=state)),
                    encoding="utf-8")
    page = chromium.new_page(viewport={"width": 1000, "height": 900})
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    try:
        page.goto(path.as_uri())
        page.locator("#rx-app[data-ready='1'] .rx-scorecard").wait_for(timeout=15_000)
        card, line = page.locator(".rx-sc-card").first, state["cards"][0]["line"]
        assert card.locator(".rx-sc-table tbody tr").last.locator("td").first.inner_text() == line["text"]
        chart = card.locator("svg.rx-sc-line")
        assert chart.count() == 1 and chart.locator("path.rx-sc-linear").count() == 1
        labels = chart.locator("text").evaluate_all("ts => ts.map(t => t.textContent)")
        assert line["lo_text"] in labels and line["hi_text"] in labels, labels
        assert not errors, errors
    finally:
        page.close()
