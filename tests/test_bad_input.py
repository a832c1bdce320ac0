"""Bad input at the edges (issue 13): hostile text in reports, inf, odd user ids, id-like columns."""

from __future__ import annotations

import json
import re
import warnings
from html.parser import HTMLParser

import numpy as np
import pandas as pd
import pytest

import rudi_explain as rx
from rudi_explain.report import report_html

from tiny import tiny_explanation  # noqa: E402

COMMENT = "<!-- x"
ATTACK = "</script><script>alert(1)</script><!--"


def payments(n_users: int = 150, random_state: int = 3) -> rx.datasets.DemoData:
    return rx.datasets.make_payments(n_users, random_state=random_state)


class _Scripts(HTMLParser):
    """The text of each <script> element, by id."""

    def __init__(self):
        super().__init__()
        self.scripts: dict[str, str] = {}
        self._in = None

    def handle_starttag(self, tag, attrs):
        if tag == "script":
            self._in = dict(attrs).get("id", "module")
            self.scripts[self._in] = ""

    def handle_endtag(self, tag):
        if tag == "script":
            self._in = None

    def handle_data(self, data):
        if self._in:
            self.scripts[self._in] += data


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
    parser = _Scripts()
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
