"""Which statistics an explanation reads, which the user gave (``explain(..., statistics=[...])``), and
whether the search ran: for the report's header and the static copy, written one way."""

from __future__ import annotations

import html
from typing import TYPE_CHECKING

from rudi_explain.views.text import shorten_words

if TYPE_CHECKING:
    from rudi_explain.explanation import Explanation

__all__ = ["statistics_given", "statistics_list"]


def statistics_given(exp: Explanation) -> dict:
    """Which statistics the explanation reads, which of them the user gave, and whether the search ran.

    Returns
    -------
    dict
        ``search`` (bool: False where ``explain(..., search=False)`` used only the given ones),
        ``statistics`` (one entry per statistic the explanation reads, in its order: ``text`` and
        ``given``), ``given_not_kept`` (given texts the forward selection left out) and ``sentence``
        (all of it in words, as the report's header and the static copy write it).
    """
    params = getattr(exp, "params", None) or {}  # a stand-in without params: nothing given, the search ran
    given = [str(t) for t in (params.get("statistics") or ())]
    search = bool(params.get("search", True))
    used = [str(st) for st in (getattr(exp.result, "statistics", None) or ())]
    rows = [{"text": t, "given": t in given} for t in used]
    left = [t for t in given if t not in used]
    n_given = sum(t in given for t in used)
    how = ("the search ran" + (f" beside {len(given)} given" if given else " (none given)") if search
           else "no search (search=False): only the given statistics")
    sentence = f"{len(rows)} statistic{'s' if len(rows) != 1 else ''}, {n_given} given; {how}"
    if left:
        sentence += f"; {len(left)} given but not kept"
    return {"search": search, "statistics": rows, "given_not_kept": left, "sentence": sentence}


def statistics_list(info: dict) -> str:
    """The statistics an explanation reads as HTML (every text escaped): the sentence of
    :func:`statistics_given`, then each statistic, "given" where the user gave it."""
    items = "".join(f'<li data-given="{str(r["given"]).lower()}"><code>{html.escape(shorten_words(r["text"]))}</code>'
                    + (" <b>given</b>" if r["given"] else " searched") + "</li>"
                    for r in info["statistics"])
    left = "".join(f'<li data-given="true" data-kept="false"><code>{html.escape(shorten_words(t))}</code> '
                   "<b>given</b>, not kept</li>" for t in info.get("given_not_kept", ()))
    return (f'<span class="rx-statistics-said" data-search="{str(info["search"]).lower()}">'
            f'{html.escape(info["sentence"])}</span><ol class="rx-statistics-list">{items}{left}</ol>')
