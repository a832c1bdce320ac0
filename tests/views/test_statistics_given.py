"""The report says which statistics were given and whether the search ran (issue 26, left-out 4).

The standalone report's header and the static copy list every statistic the explanation reads, each marked
"given" where ``explain(..., statistics=[...])`` gave it; the reference is the call's own arguments and
``exp.result.statistics``, read back from the HTML by a parser.
"""

from __future__ import annotations

from html.parser import HTMLParser

import pytest
from tiny import tiny_payments

import rudi_explain as rx
from rudi_explain.views.report import report_html
from rudi_explain.views.static_view import static_html

GIVEN = ["Select(amount) | RetainBy(merchant_category=gambling) | Sum", "Select(amount) | Count"]
FAST = dict(n_rules=6, background=False, student_params={"epochs": 25})


class Listed(HTMLParser):
    """Each statistic list of a page: its sentence and search flag, and per item (text, given)."""

    def __init__(self):
        super().__init__()
        self.lists: list[dict] = []
        self._where: str | None = None
        self._item: dict | None = None

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "span" and a.get("class") == "rx-statistics-said":
            self.lists.append({"search": a["data-search"], "sentence": "", "items": []})
            self._where = "sentence"
        elif tag == "li" and "data-given" in a and self.lists:
            self._item = {"given": a["data-given"] == "true", "kept": a.get("data-kept") != "false", "text": ""}
            self.lists[-1]["items"].append(self._item)
        elif tag == "code" and self._item is not None:
            self._where = "code"

    def handle_endtag(self, tag):
        if tag in ("span", "code"):
            self._where = None
        if tag == "li":
            self._item = None

    def handle_data(self, data):
        if self._where == "sentence":
            self.lists[-1]["sentence"] += data
        elif self._where == "code" and self._item is not None:
            self._item["text"] += data


def lists_of(page: str) -> list[dict]:
    p = Listed()
    p.feed(page)
    return p.lists


@pytest.fixture(scope="module")
def demo():
    return rx.datasets.make_payments(300, random_state=2)


@pytest.mark.parametrize("search", [False, True])
def test_the_report_and_the_static_copy_mark_the_given_statistics(demo, search):
    extra = dict(n_stats=3, n_simulations=20) if search else {}
    exp = rx.explain(None, demo.events, scores=demo.risk, statistics=GIVEN, search=search, random_state=0,
                     **FAST, **extra)
    used = [str(s) for s in exp.result.statistics]
    given = [str(rx.Statistic.parse(t)) for t in GIVEN]  # the texts as the library writes them
    for page in (report_html(exp, n_users=5), static_html(exp)):
        found = lists_of(page)
        assert len(found) == 1, len(found)
        got = found[0]
        assert got["search"] == str(search).lower()
        kept = [(r["text"], r["given"]) for r in got["items"] if r["kept"]]
        assert kept == [(t, t in given) for t in used]  # every statistic read, in order, marked by the call
        left = [r["text"] for r in got["items"] if not r["kept"]]
        assert left == [t for t in given if t not in used] and all(r["given"] for r in got["items"] if not r["kept"])
        n_given = sum(t in given for t in used)
        assert got["sentence"].startswith(f"{len(used)} statistic{'s' if len(used) != 1 else ''}, {n_given} given; ")
        assert ("no search (search=False)" in got["sentence"]) == (not search)
        if not search:  # only the given ones
            assert set(used) <= set(given)


def test_an_explanation_with_nothing_given_says_the_search_ran():
    exp = tiny_payments(150)
    for page in (report_html(exp, n_users=5), static_html(exp)):
        (got,) = lists_of(page)
        assert got["search"] == "true" and "the search ran (none given)" in got["sentence"]
        assert [r["text"] for r in got["items"]] == [str(s) for s in exp.result.statistics]
        assert not any(r["given"] for r in got["items"])


def test_statistic_texts_are_escaped():
    from rudi_explain.views.statistics_given import statistics_list

    info = {"search": False, "sentence": "1 statistic, 1 given; <b>", "given_not_kept": ["a</code><script>"],
            "statistics": [{"text": "Select(x) | RetainBy(c=<i>) | Sum", "given": True}]}
    page = statistics_list(info)
    assert "<script>" not in page and "<i>" not in page and "&lt;b&gt;" in page
    assert [(r["text"], r["given"]) for r in lists_of(page)[0]["items"]] == [
        ("Select(x) | RetainBy(c=<i>) | Sum", True), ("a</code><script>", True)]
