"""Every user link in the standalone report opens that user (issue 14, item 6), in Chromium from file://.

The report (``exp.to_html``) embeds the drill-down of every user a view
links to: the top-scored users, every rule card's examples and the users the
rules explain worst. The test clicks each of those links in the page, with
no server and no network, and sees the user's drill-down, never "not in this
report"; the "Users in this report" list names each embedded user once.

At full width every link is clicked; then the same page is narrowed to a
640 px window, where the first link of each card and of each list is
clicked again (the links of one list share their markup and their handler:
what the narrow layout can break is a kind of link, not one user's). One
page session for both widths, on the report the downloads test reads too
(``small_report``, tests/browser/conftest.py).
"""

from __future__ import annotations

import json

import pytest


@pytest.fixture(scope="module")
def report(small_report):
    return small_report[0]


def _open(page, uid: str, link) -> None:
    link.click()
    page.locator(f".rx-user[data-user='{uid}']").wait_for(timeout=5_000)
    assert page.locator(".rx-user-error").count() == 0
    assert page.locator(".rx-user .rx-fired-rule, .rx-user .rx-events").count() > 0


def _open_links(page, every: bool) -> tuple[set[str], int, int]:
    """Click the example links of every rule card, the top-scored users (User tab) and the worst explained
    (Faithfulness tab): each link (``every``) or the first of each card and list; the users opened and
    the number of links clicked, and of cards."""
    opened: set[str] = set()
    clicked = 0
    page.locator(".rx-tab[data-tab='rules']").click()
    n_cards = page.locator(".rx-card").count()
    assert n_cards > 0
    for i in range(n_cards):
        page.locator(".rx-tab[data-tab='rules']").click()
        card = page.locator(".rx-card").nth(i)
        if card.get_attribute("aria-expanded") != "true":
            card.click()
        uids = card.locator(".rx-examples .rx-user-link").evaluate_all("els => els.map(e => e.dataset.user)")
        assert uids, f"card {i} has no example users"
        for uid in uids if every else uids[:1]:
            page.locator(".rx-tab[data-tab='rules']").click()
            card = page.locator(".rx-card").nth(i)
            if card.get_attribute("aria-expanded") != "true":
                card.click()
            _open(page, uid, card.locator(f".rx-examples .rx-user-link[data-user='{uid}']"))
            opened.add(uid)
            clicked += 1
    for tab, links in (("user", ".rx-top-users .rx-user-link"), ("effects", ".rx-worst .rx-user-link")):
        page.locator(f".rx-tab[data-tab='{tab}']").click()
        uids = page.locator(links).evaluate_all("els => els.map(e => e.dataset.user)")
        assert uids, tab
        for uid in uids if every else uids[:1]:
            page.locator(f".rx-tab[data-tab='{tab}']").click()
            _open(page, uid, page.locator(f"{links}[data-user='{uid}']").first)
            opened.add(uid)
            clicked += 1
    return opened, clicked, n_cards


def test_every_link_in_the_report_opens_its_user(chromium, shots, report):
    page = chromium.new_page(viewport={"width": 1100, "height": 900})
    requests: list[str] = []
    page.on("request", lambda r: requests.append(r.url))
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.set_default_timeout(10_000)
    try:
        page.goto(report.as_uri())
        page.locator("#rx-app[data-ready='1'] .rx-tab[data-tab='rules']").click(timeout=15_000)  # it opens on the Scorecard
        page.locator(".rx-card").first.wait_for(timeout=15_000)
        embedded = set(json.loads(page.locator("#rx-users").text_content()))
        listed = page.locator(".rx-report-users p").text_content()  # inside a closed <details>
        assert all(uid in listed for uid in embedded)
        for width, every in ((1100, True), (640, False)):
            page.set_viewport_size({"width": width, "height": 900})
            opened, clicked, n_cards = _open_links(page, every)
            assert opened <= embedded
            # every link: more than 20 users; narrow: a link of each card and of both lists
            assert len(opened) > 20 if every else clicked == n_cards + 2
            shots(page, f"report-links-{width}")  # the last worst-explained user, opened from its link
            # a user the report does not hold says so in words (the one case of "not in this report")
            page.locator(".rx-tab[data-tab='user']").click()
            page.locator(".rx-user-input").fill("nobody-here")
            page.locator(".rx-user-input").press("Enter")
            assert "not in this report" in page.locator(".rx-user-error").inner_text()
            print(f"\n{width} px: {clicked} links clicked, {len(opened)} linked users of {len(embedded)} embedded")
        assert all(u.startswith(("file:", "blob:", "data:")) for u in requests), requests
        assert not errors, errors
    finally:
        page.close()
