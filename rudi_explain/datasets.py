"""Built-in demo data, generated locally so everything runs offline.

Two generators of behaviour sequences, each with a planted risk score that is
a known function of a few statistics (depth 1 to 4), so that the search and
the rules can be checked against a known answer:

* :func:`make_payments`: card payments with categorical and numerical columns;
* :func:`make_edits`: a categorical-only log in the spirit of Wikipedia edits
  (the paper's VEWS data).

The demo teachers, :func:`train_demo_gru` and :func:`make_demo_pipeline`, are
re-exported from :mod:`rudi_explain.teachers.demo_gru`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from rudi_explain.data.sequences import Sequences
from rudi_explain.statistics import Statistic
from rudi_explain.teachers.demo_gru import make_demo_pipeline, train_demo_gru
from rudi_explain.validation import check_random_state_seed, check_whole

__all__ = ["DemoData", "make_payments", "make_edits", "train_demo_gru", "make_demo_pipeline"]


@dataclass
class DemoData:
    """Events with a planted risk score and labels.

    Attributes
    ----------
    events : DataFrame
        One row per event: ``user_id``, ``ts`` and the behaviour columns.
    risk : Series
        The planted risk score, indexed by user id in sorted order.
    labels : Series
        0/1 labels drawn from the risk (``P(1) = sigmoid(risk)``).
    planted : list of Statistic
        The statistics the risk is made of.
    formula : str
        How the risk combines them, in words.
    categorical, numerical : list of str
        The columns of each kind.
    units : dict of str to str
        The unit of each numerical column that has one (``Sequences(units=)``).
    """

    events: pd.DataFrame
    risk: pd.Series
    labels: pd.Series
    planted: list[Statistic]
    formula: str
    categorical: list[str] = field(default_factory=list)
    numerical: list[str] = field(default_factory=list)
    units: dict = field(default_factory=dict)

    def sequences(self) -> Sequences:
        """The events as :class:`Sequences`."""
        return Sequences(self.events, user="user_id", time="ts",
                         categorical=self.categorical, numerical=self.numerical, units=self.units)


def _lengths(rng: np.random.Generator, n_users: int, median: float) -> np.ndarray:
    # Heavy tail: most users have tens of events, a few have thousands.
    return np.clip(np.round(rng.lognormal(np.log(median), 0.9, n_users)), 1, 3000).astype(np.int64)


def _draw(rng: np.random.Generator, probs: np.ndarray, owner: np.ndarray) -> np.ndarray:
    """One category per event from its user's probabilities (rows of ``probs``)."""
    cum = np.cumsum(probs, axis=1)
    cum /= cum[:, -1:]
    u = rng.random(len(owner))
    out = np.zeros(len(owner), dtype=np.int8)
    for j in range(probs.shape[1] - 1):  # few categories: a loop over columns, not users
        out += u > cum[owner, j]
    return out


def _user_ids(n_users: int) -> np.ndarray:
    width = max(6, len(str(n_users)))
    return np.array([f"u{i:0{width}d}" for i in range(n_users)], dtype=object)


def _times(rng: np.random.Generator, lengths: np.ndarray, owner: np.ndarray, mean_gap_s: float) -> np.ndarray:
    n_users = len(lengths)
    start = np.datetime64("2026-01-01T00:00:00", "s") + rng.integers(0, 90 * 86400, n_users).astype("timedelta64[s]")
    gaps = rng.exponential(mean_gap_s, len(owner)).astype(np.int64) + 1
    ends = np.cumsum(lengths)
    within = np.cumsum(gaps) - np.repeat(np.r_[0, np.cumsum(gaps)[ends[:-1] - 1]], lengths)
    return start[owner] + within.astype("timedelta64[s]")


def _sigmoid(x: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-x))


def _standardize(x: np.ndarray) -> np.ndarray:
    x = np.nan_to_num(x, nan=np.nanmedian(x) if np.isfinite(x).any() else 0.0)
    sd = x.std()
    return (x - x.mean()) / (sd if sd > 0 else 1.0)


PAYMENT_CATEGORIES = {
    "card_type": ["credit", "debit", "prepaid", "virtual"],
    "channel": ["pos", "online", "atm", "transfer"],
    "merchant_category": ["grocery", "fuel", "restaurants", "travel", "electronics",
                          "gambling", "crypto", "utilities", "fashion", "pharmacy"],
    "country": ["home", "eu", "us", "other"],
}

PAYMENT_PLANTED = [
    "Select(amount) | RetainBy(merchant_category=gambling) | Sum",
    "Select(country) | Mean",
    "Select(amount) | RetainBy(channel=atm) | FilterBy(country=home) | Sum",
    "Select(hour) | RetainBy(channel=online) | SortBy(amount, desc) | Top(5) | Mean",
]


def make_payments(n_users: int = 5000, random_state: int | None = 0) -> DemoData:
    """Synthetic card payments of ``n_users`` users, about 50 events each.

    Columns: ``card_type``, ``channel``, ``merchant_category``, ``country``
    (categorical), ``amount`` (lognormal, 3% refunds as negative amounts) and
    ``hour`` (numerical), ``ts`` (datetime). Each user has latent habits
    (gambling, travel abroad, cash withdrawals, night activity) that shape
    their events; the planted risk is then computed from the events alone:

    ``risk = 0.8 z(log1p(gambling spend)) + 2.5 (share of country = other)
    + 0.9 [foreign ATM cash > 300] + 0.5 z(mean hour of the 5 largest online
    payments) - 1.2``, with z a standardisation over users; labels are drawn
    with ``P(1) = sigmoid(risk)``. :attr:`DemoData.planted` lists the four
    statistics (depths 2, 1, 3 and 4).

    Parameters
    ----------
    n_users : int, default=5000
    random_state : int or None, default=0

    Returns
    -------
    DemoData
    """
    check_whole(n_users, "n_users", min_value=1)
    rng = np.random.default_rng(check_random_state_seed(random_state))
    lengths = _lengths(rng, n_users, median=33)
    owner = np.repeat(np.arange(n_users), lengths)

    gamble = rng.beta(0.5, 12, n_users)
    abroad = rng.beta(0.6, 10, n_users)
    cash = rng.beta(1.0, 8, n_users)
    online = rng.beta(2.0, 4, n_users)
    night = rng.beta(1.2, 6, n_users)
    spend = rng.lognormal(3.3, 0.6, n_users)

    card = _draw(rng, np.column_stack([np.full(n_users, 0.4), np.full(n_users, 0.45), 0.05 + gamble,
                                       0.03 + abroad / 2]), owner)
    channel = _draw(rng, np.column_stack([1 - online - cash, online, cash, np.full(n_users, 0.05)]).clip(0.01), owner)
    base = np.array([0.22, 0.1, 0.14, 0.05, 0.06, 0.0, 0.01, 0.08, 0.09, 0.05])
    merchant_p = np.tile(base, (n_users, 1))
    merchant_p[:, 5] = gamble
    merchant_p[:, 6] = 0.01 + gamble / 3
    merchant_p[:, 3] = 0.03 + abroad / 2
    merchant = _draw(rng, merchant_p, owner)
    country = _draw(rng, np.column_stack([1 - abroad, abroad * 0.5, abroad * 0.2, abroad * 0.3]).clip(0.001), owner)

    scale = np.array([0.8, 1.2, 0.9, 4.0, 3.0, 1.5, 2.5, 1.5, 1.4, 0.6])[merchant]
    amount = np.round(spend[owner] * scale * rng.lognormal(0, 0.8, len(owner)), 2)
    amount[channel == 2] = np.round(amount[channel == 2] * 2.5, -1)  # cash comes in round sums
    amount[rng.random(len(owner)) < 0.03] *= -1  # refunds
    is_night = rng.random(len(owner)) < night[owner]
    hour = np.where(is_night, rng.integers(0, 6, len(owner)), rng.integers(7, 24, len(owner))).astype(np.float64)
    hour[rng.random(len(owner)) < 0.01] = np.nan  # a few unknown hours

    users = _user_ids(n_users)
    events = pd.DataFrame({
        "user_id": users[owner],
        "ts": _times(rng, lengths, owner, mean_gap_s=36 * 3600),
        "card_type": pd.Categorical.from_codes(card, PAYMENT_CATEGORIES["card_type"]),
        "channel": pd.Categorical.from_codes(channel, PAYMENT_CATEGORIES["channel"]),
        "merchant_category": pd.Categorical.from_codes(merchant, PAYMENT_CATEGORIES["merchant_category"]),
        "country": pd.Categorical.from_codes(country, PAYMENT_CATEGORIES["country"]),
        "amount": amount,
        "hour": hour,
    })
    categorical, numerical = list(PAYMENT_CATEGORIES), ["amount", "hour"]
    seqs = Sequences(events, user="user_id", time="ts", categorical=categorical, numerical=numerical)
    planted = [Statistic.parse(t) for t in PAYMENT_PLANTED]
    gambling, countries, foreign_cash, online_hour = (s.evaluate(seqs) for s in planted)
    other = countries[:, seqs.categories("country").index("other")]
    risk = (0.8 * _standardize(np.log1p(np.maximum(gambling, 0)))
            + 2.5 * other
            + 0.9 * (foreign_cash > 300)
            + 0.5 * _standardize(online_hour)
            - 1.2)
    labels = (rng.random(n_users) < _sigmoid(risk)).astype(np.int64)
    formula = ("0.8 z(log1p(gambling spend)) + 2.5 share(country=other) "
               "+ 0.9 [foreign ATM cash > 300] + 0.5 z(mean hour of the 5 largest online payments) - 1.2")
    index = pd.Index(seqs.users, name="user_id")
    return DemoData(events, pd.Series(risk, index=index, name="risk"), pd.Series(labels, index=index, name="label"),
                    planted, formula, categorical, numerical, units={"amount": "EUR"})


EDIT_CATEGORIES = {
    "namespace": ["article", "talk", "user", "user_talk", "template", "project"],
    "action": ["edit", "create", "revert", "undo"],
    "size": ["tiny", "small", "medium", "large"],
    "reverted": ["False", "True"],
    "quick": ["False", "True"],
}

EDIT_PLANTED = [
    "Select(reverted) | Mean",
    "Select(namespace) | RetainBy(reverted=True) | Sum",
    "Select(action) | FilterBy(namespace=article) | Top(5) | Max",
]


def make_edits(n_users: int = 5000, random_state: int | None = 0) -> DemoData:
    """A categorical-only edit log in the spirit of the paper's Wikipedia data.

    Columns: ``namespace`` (article, talk, user, ...), ``action`` (edit,
    create, revert, undo), ``size`` (tiny ... large), ``reverted`` and
    ``quick`` (an edit within 3 minutes of the previous one), all categorical.
    Vandal-like users edit user pages, get reverted and edit in quick bursts.

    The planted risk is ``3 share(reverted) + 0.15 (reverted user_talk edits)
    + 1.0 [a revert among the first 5 non-article edits] - 1.5``.
    """
    check_whole(n_users, "n_users", min_value=1)
    rng = np.random.default_rng(check_random_state_seed(random_state))
    lengths = _lengths(rng, n_users, median=20)
    owner = np.repeat(np.arange(n_users), lengths)
    vandal = rng.beta(0.6, 3, n_users)
    namespace = _draw(rng, np.column_stack([0.6 - vandal / 2, np.full(n_users, 0.1), 0.05 + vandal / 3,
                                            0.03 + vandal / 4, np.full(n_users, 0.05),
                                            np.full(n_users, 0.05)]).clip(0.01), owner)
    action = _draw(rng, np.column_stack([np.full(n_users, 0.7), np.full(n_users, 0.1), 0.05 + vandal / 5,
                                         0.03 + vandal / 6]), owner)
    size = _draw(rng, np.column_stack([0.2 + vandal / 2, np.full(n_users, 0.4), np.full(n_users, 0.3),
                                       np.full(n_users, 0.1)]), owner)
    reverted = (rng.random(len(owner)) < 0.05 + 0.6 * vandal[owner]).astype(np.int8)
    quick = (rng.random(len(owner)) < 0.2 + 0.5 * vandal[owner]).astype(np.int8)
    users = _user_ids(n_users)
    events = pd.DataFrame({
        "user_id": users[owner],
        "ts": _times(rng, lengths, owner, mean_gap_s=6 * 3600),
        **{name: pd.Categorical.from_codes(codes, EDIT_CATEGORIES[name])
           for name, codes in [("namespace", namespace), ("action", action), ("size", size),
                               ("reverted", reverted), ("quick", quick)]},
    })
    categorical = list(EDIT_CATEGORIES)
    seqs = Sequences(events, user="user_id", time="ts", categorical=categorical, numerical=[])
    planted = [Statistic.parse(t) for t in EDIT_PLANTED]
    share, reverted_ns, early = (s.evaluate(seqs) for s in planted)
    risk = (3.0 * share[:, seqs.categories("reverted").index("True")]
            + 0.15 * reverted_ns[:, seqs.categories("namespace").index("user_talk")]
            + 1.0 * np.nan_to_num(early[:, seqs.categories("action").index("revert")])
            - 1.5)
    labels = (rng.random(n_users) < _sigmoid(risk)).astype(np.int64)
    formula = "3 share(reverted) + 0.15 (reverted user_talk edits) + 1.0 [revert among first 5 non-article edits] - 1.5"
    index = pd.Index(seqs.users, name="user_id")
    return DemoData(events, pd.Series(risk, index=index, name="risk"), pd.Series(labels, index=index, name="label"),
                    planted, formula, categorical, [])

