"""Event attributions: which of a user's events the teacher itself leaned on.

The rules say which statistics, and so which events, make a user's rule
score. This module asks the model: how much did each event move the
teacher's score? and measures how much of that falls on the events the
user's fired rules read (the **rule-model agreement**).

Three methods, one result (:class:`EventAttributions`, a per-event table):

* ``"integrated_gradients"`` (PyTorch teachers, the default for them):
  Captum's :class:`~captum.attr.IntegratedGradients` through the teacher
  adapter's encoding. Categorical codes are not differentiable, so the
  gradients are taken at the outputs of the model's ``nn.Embedding`` layers
  (replaced by hooks, as Captum's ``LayerIntegratedGradients`` does) and at
  the float inputs. Attributions are summed over the embedding and channel
  dimensions: one score per event, and per column of an event (a numerical
  column's value channel and its missing flag together). **Baseline**: the
  same user with every event's encoded content set to padding: category code
  0 (the padding index, a zero vector in an ``nn.Embedding(padding_idx=0)``),
  numerical values and missing flags 0, the number of events unchanged.
  Completeness: the attributions of a user sum to ``score(user) -
  score(baseline)``; the gap (``delta``) is reported with every result.
* ``"ablation"`` (PyTorch teachers): Captum's
  :class:`~captum.attr.FeatureAblation` over whole events: each event in
  turn set to that baseline (padding content, same length), all users of a
  batch at once. Chosen over DeepLift by measurement
  (``benchmarks/bench_attributions.py``): Captum's DeepLift has no rule for
  the recurrent cell, which runs as one fused operator, so its attributions
  do not add up to the score difference (on the demo GRU its completeness
  gap is 68% of the difference for the median user), while each ablation
  figure is an exact score difference, at 40 to 45 forward passes for 1,000
  users (IG: 57 to 70).
* ``"occlusion"`` (any teacher; the only one for scikit-learn and
  callable teachers): drop one event, re-score the user. The teacher sees
  each user under the user's real id, once per call (a teacher that looks
  users up by id finds the right one): the variants of a chunk of users are
  scored in rounds of one call each, round ``j`` every user without its
  ``j``-th occluded event. Bounded: only each user's most recent
  ``max_events`` events are occluded (the others get NaN, ``attributed`` is
  False), and a ``time_budget`` stops between chunks (the users not reached
  get NaN, and :attr:`EventAttributions.note` says so).

The attribution of an event is its share of ``score(user) - score(user
without it)`` (occlusion, ablation) or of ``score(user) - score(baseline)``
(IG), in the teacher's score unit (for the demo GRU: logits).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from rudi_explain.audit.event_batch import EventBatch
from rudi_explain.audit.occlusion import MAX_OCCLUDED, OCCLUSION_CHUNK_EVENTS, occlusion
from rudi_explain.audit.torch_attributions import GRADIENT_BATCH, torch_batch
from rudi_explain.data.sequences import Sequences
from rudi_explain.exceptions import InputError, StateError
from rudi_explain.explanation.result import FittedState
from rudi_explain.rules.formula import formula_literals
from rudi_explain.rules.ruleset import LinearTerm
from rudi_explain.rules.values import format_value
from rudi_explain.statistics import reads
from rudi_explain.teachers.adapters import GivenScores, Teacher, TorchTeacher, as_teacher
from rudi_explain.validation import check_whole

if TYPE_CHECKING:
    from rudi_explain.explanation import Explanation

__all__ = ["EventAttributions", "AgreementSummary", "METHODS", "attribute_events", "user_attributions",
           "agreement_summary", "rule_event_mask", "output_events", "agreement", "teacher_of", "TeacherUnavailable",
           "EventBatch", "INFORMATIVE_SHARE"]

#: The agreement says something only where the fired rules read fewer than this share of the attributed events:
#: rules on a statistic over all events (a share, an average) read them all, and then the agreement is 100%
#: whatever the model attends to.
INFORMATIVE_SHARE = 0.95
#: Method names, for ``method=``.
METHODS = ("integrated_gradients", "ablation", "occlusion")
#: IG's integration points by default (see :func:`attribute_events`).
IG_STEPS = 32


class TeacherUnavailable(StateError):
    """The explanation cannot reach a model to ask (scores given, or loaded from a file)."""


# ------------------------------------------------------------------ results
@dataclass
class EventAttributions:
    """One user's event attributions and the rule-model agreement.

    Attributes
    ----------
    user_id : object
    method : str
        One of :data:`METHODS`.
    events : pandas DataFrame
        One row per event of the user, in time order (the rows of
        ``exp.user(uid).events``): ``event`` (position in time order),
        ``attribution`` (NaN where not attributed), ``attributed`` (whether
        the method scored this event: IG and ablation only see the events the
        model reads, e.g. the demo GRU's last 64; occlusion only its most
        recent ``max_events``), ``feeds_rule`` (whether a fired rule's
        statistic reads the event, as the drill-down highlights it), then for
        gradient methods one column ``attribution[<column>]`` per data column.
    agreement : float
        Share of the absolute attribution that falls on the events the fired
        rules read, in [0, 1]; NaN when no rule fires (the rules read no
        event) or every attribution is 0.
    event_share : float
        Share of the attributed events the fired rules read: the agreement
        that attributions spread evenly would give. Compare the two.
    score : float
        The teacher's score of the user, as the method computed it.
    reference : float
        IG: the score of the baseline; ablation and occlusion: NaN (each
        event has its own reference).
    delta : float
        IG only: ``sum(attribution) - (score - reference)``, the completeness
        gap of the numerical integration (NaN otherwise).
    note : str
        What was left out and why (empty when nothing was).
    """

    user_id: Any
    method: str
    events: pd.DataFrame
    agreement: float
    event_share: float
    score: float
    reference: float = float("nan")
    delta: float = float("nan")
    note: str = ""

    @property
    def lift(self) -> float:
        """``agreement / event_share``: above 1, the model leans on the events the rules read more than on others."""
        return self.agreement / self.event_share if self.event_share > 0 else float("nan")

    @property
    def informative(self) -> bool:
        """Whether the agreement can tell anything: the fired rules read fewer than
        :data:`INFORMATIVE_SHARE` of the attributed events (else it is near 100% whatever the model does)."""
        return bool(np.isfinite(self.agreement) and self.event_share < INFORMATIVE_SHARE)

    @property
    def column_attributions(self) -> pd.Series:
        """Total attribution per data column (gradient methods; empty otherwise)."""
        cols = [c for c in self.events.columns if c.startswith("attribution[")]
        return pd.Series({c[len("attribution["):-1]: float(self.events[c].sum()) for c in cols}, dtype=np.float64)

    def __repr__(self) -> str:
        n = int(self.events["attributed"].sum())
        return (f"EventAttributions({self.user_id!r}, {self.method}: {n} of {len(self.events)} events attributed, "
                f"agreement {_pct(self.agreement)} (events the rules read: {_pct(self.event_share)} of them))"
                + (f"; {self.note}" if self.note else ""))


@dataclass
class AgreementSummary:
    """Rule-model agreement over a sample of (held-out) users (:meth:`Explanation.agreement`).

    Attributes
    ----------
    per_user : pandas DataFrame
        Indexed by user id, one row per user reached: ``agreement``,
        ``event_share``, ``lift`` (their ratio), ``rule_fired`` (whether any
        rule fires for the user: where none does, ``agreement`` is NaN),
        ``informative`` (the agreement is defined and the fired rules read
        fewer than :data:`INFORMATIVE_SHARE` of the attributed events: only
        these users enter the distribution), ``n_events``, ``n_attributed``,
        ``score``, ``delta`` (IG only).
    method : str
    seconds : float
        Wall time of the attributions.
    note : str
        What was left out (users not reached in the time budget, ...).
    n_sampled : int
        Users drawn for the sample (``per_user`` holds those reached: fewer
        when the time budget ran out). 0 when unknown.
    n_pool : int
        Users the sample was drawn from (the held-out users). 0 when unknown.
    """

    per_user: pd.DataFrame
    method: str
    seconds: float
    note: str = ""
    n_sampled: int = 0
    n_pool: int = 0

    def _informative(self) -> pd.Series:
        """The agreement of the users where it is informative (see ``per_user``'s ``informative``)."""
        pu = self.per_user
        keep = pu["informative"].astype(bool) if "informative" in pu else pu["agreement"].notna()
        return pu.loc[keep, "agreement"].dropna()

    @property
    def n_uninformative(self) -> int:
        """Users with a defined agreement that says nothing: the fired rules read (nearly) every event."""
        return int(self.per_user["agreement"].notna().sum() - len(self._informative()))

    @property
    def quantiles(self) -> pd.Series:
        """Agreement at the 10th, 25th, 50th, 75th and 90th percentiles (informative users only)."""
        a = self._informative()
        return a.quantile([0.1, 0.25, 0.5, 0.75, 0.9]) if len(a) else pd.Series(dtype=np.float64)

    @property
    def deciles(self) -> pd.Series:
        """Agreement at the 10th, 20th, ..., 90th percentiles (informative users only; linear interpolation)."""
        a = self._informative()
        return a.quantile(np.round(np.arange(1, 10) / 10, 1)) if len(a) else pd.Series(dtype=np.float64)

    @property
    def n_no_rule(self) -> int:
        """Users reached for whom no rule fires (their agreement is undefined: the rules read none of their events)."""
        return int((~self.per_user["rule_fired"].astype(bool)).sum()) if "rule_fired" in self.per_user else 0

    def histogram(self, bins: int = 10) -> tuple[np.ndarray, np.ndarray]:
        """Counts of users by agreement in ``bins`` equal bins over [0, 1] (the last bin closed).

        Returns
        -------
        counts : ndarray of int, shape (bins,)
        edges : ndarray of float, shape (bins + 1,)
        """
        a = self._informative().to_numpy(dtype=np.float64)
        counts, edges = np.histogram(a, bins=bins, range=(0.0, 1.0))
        return counts.astype(np.int64), edges

    def describe(self) -> dict:
        """Figures for a summary view: users, informative users, mean, median and quartiles of both shares.

        The agreement's figures are over the users where it is informative
        (``n_informative``); ``uninformative`` says why there are none, if so.
        ``lift_median`` leads: how much more of the attribution falls on the
        events the rules read than their share of the events would give.
        """
        a = self._informative()
        share = self.per_user.loc[a.index, "event_share"]
        n_defined = int(self.per_user["agreement"].notna().sum())
        why = None
        if n_defined and not len(a):
            why = (f"the fired rules read {INFORMATIVE_SHARE:.0%} or more of the events of each of the {n_defined} "
                   "users (their statistics run over all events: shares, averages, counts), so the agreement "
                   "would read 100% whatever the model attends to; it is not shown")
        return {"method": self.method, "n_users": int(len(self.per_user)), "n_defined": n_defined,
                "n_informative": int(len(a)), "n_uninformative": n_defined - int(len(a)), "uninformative": why,
                "agreement_mean": float(a.mean()) if len(a) else None,
                "agreement_median": float(a.median()) if len(a) else None,
                "agreement_quartiles": [float(x) for x in a.quantile([0.25, 0.75])] if len(a) else None,
                "event_share_mean": float(share.mean()) if len(a) else None,
                "lift_median": float(self.per_user.loc[a.index, "lift"].median()) if len(a) else None,
                "seconds": round(self.seconds, 3), "note": self.note}

    def to_dict(self, bins: int = 10) -> dict:
        """The distribution as plain JSON (the widget's Summary shows it): :meth:`describe` and more.

        Adds ``n_sampled``, ``n_pool``, ``n_no_rule``, ``n_zero`` (a rule
        fires but every attribution is 0: undefined too), ``deciles`` (9
        values, None without defined users), ``counts`` and ``edges`` of
        :meth:`histogram`.
        """
        out = self.describe()
        counts, edges = self.histogram(bins)
        undefined = int(self.per_user["agreement"].isna().sum())  # n_zero below: a rule fired, attributions all 0
        dec = self.deciles
        return out | {
            "n_sampled": int(self.n_sampled or len(self.per_user)), "n_pool": int(self.n_pool),
            "n_no_rule": self.n_no_rule, "n_zero": undefined - self.n_no_rule,
            "deciles": [round(float(x), 4) for x in dec] if len(dec) else None,
            "counts": [int(c) for c in counts], "edges": [round(float(e), 4) for e in edges],
        }

    def __repr__(self) -> str:
        d = self.describe()
        mean = "not informative" if d["agreement_mean"] is None else f"median lift {d['lift_median']:.2f}, " \
            f"mean {_pct(d['agreement_mean'])}, median {_pct(d['agreement_median'])}"
        return (f"AgreementSummary({self.method}: {d['n_users']} users, {d['n_informative']} with an informative "
                f"agreement ({d['n_uninformative']} whose rules read nearly every event), {mean}; no rule fired "
                f"for {self.n_no_rule})" + (f"; {self.note}" if self.note else ""))


def _pct(x: float | None) -> str:
    """A share (agreement, events read) as a percent, the one way (never as a fraction)."""
    return "undefined" if x is None else format_value(x, "share")


# ------------------------------------------------------------------ which events the rules read
def _rule_outputs(state: FittedState) -> np.ndarray:
    """Boolean (n_rules, n_outputs): the statistic outputs each rule reads."""
    L = state.literals
    out = np.zeros((len(state.rules), len(L.output_statistic)), dtype=bool)
    for k, rule in enumerate(state.rules):
        if isinstance(rule, LinearTerm):
            out[k, rule.column] = True
        else:
            for lit in formula_literals(rule.formula):
                out[k, int(L.column[lit.index])] = True
    return out


def rule_event_mask(exp: Explanation, user_indices: np.ndarray, counted: bool = True) -> np.ndarray:
    """Which events of these users feed a rule that fires for them.

    The statistic of every output a fired rule reads is run (its row
    operators: ``RetainBy``, ``FilterBy``, ``SortBy`` + ``Top``, ``Within``,
    ...) on the events of the users it fires for, in one pass per output over
    all of them; for one output of a ``GroupBy`` statistic only that group's
    events count. With ``counted=False`` these are exactly the events the
    drill-down highlights (:func:`rudi_explain.views.payloads.feeding_rows`).

    With ``counted=True`` (the default) an output of a categorical selection
    keeps only the events of its category: "share of payments at gambling
    merchants" counts the gambling payments. (The others enter its
    denominator, but then every share would read every event: on the demo
    GRU's explanation, 299 of 300 held-out users had agreement 1 that way.)
    A statistic over all events (an average over all payments) still reads
    them all: compare the agreement with ``event_share``, or read ``lift``.

    Parameters
    ----------
    exp : Explanation
    user_indices : array of int
        Indices into ``exp.sequences.users``.
    counted : bool, default=True
        Restrict a category's output to that category's events.

    Returns
    -------
    ndarray of bool
        Over the events of those users, flat in ``seqs.batch_positions(user_indices)`` order.
    """
    state = exp.ready_result()
    seqs = exp.sequences
    idx = np.asarray(user_indices, dtype=np.int64)
    positions, segment = seqs.batch_positions(idx)
    mask = np.zeros(len(positions), dtype=bool)
    if not len(state.rules) or not len(idx):
        return mask
    used = (state.fires[idx].astype(np.int64) @ _rule_outputs(state).astype(np.int64)) > 0   # (B, n_outputs)
    # Flat index of a global event position of batch user b: block start + position within the user.
    block_start = np.zeros(len(idx), dtype=np.int64)
    np.cumsum(seqs.lengths[idx][:-1], out=block_start[1:])
    for c in np.flatnonzero(used.any(axis=0)):  # a loop over statistic outputs, not users
        who = np.flatnonzero(used[:, c])
        kept, seg = output_events(exp, idx[who], int(c), counted=counted)
        users = idx[who][seg]
        mask[block_start[who][seg] + kept - seqs.offsets[users]] = True
    return mask


def output_events(exp: Explanation, user_indices: np.ndarray, column: int, counted: bool = True
                  ) -> tuple[np.ndarray, np.ndarray]:
    """The events statistic output ``column`` (of ``exp.literals``) reads for each of ``user_indices``.

    :func:`rudi_explain.statistics.reads.output_events` for the output's statistic: its row
    operators run on those users' events; a ``GroupBy`` output keeps its group and, with
    ``counted``, a one-hot output its category (``Count`` ignores the selection). Returns the
    events' positions in ``exp.sequences`` and, for each, which of ``user_indices`` it belongs to.
    """
    state = exp.ready_result()
    L = state.literals
    stat = state.statistics[int(L.output_statistic[column])]
    return reads.output_events(exp.sequences, stat, user_indices, int(L.output_index[column]), counted=counted)


def agreement(abs_attribution: np.ndarray, feeds: np.ndarray, segment: np.ndarray, n_users: int,
              fired_any: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per user: share of absolute attribution on the events the rules read, and share of such events.

    Parameters
    ----------
    abs_attribution : ndarray of float, shape (n_events,)
        ``|attribution|``; NaN for events not attributed (left out of both shares).
    feeds : ndarray of bool, shape (n_events,)
    segment : ndarray of int, shape (n_events,)
        The user of each event, in ``range(n_users)``.
    n_users : int
    fired_any : ndarray of bool, shape (n_users,)
        Whether any rule fires for the user: where none does, both are NaN.

    Returns
    -------
    agreement, event_share : ndarray of float, shape (n_users,)
    """
    ok = np.isfinite(abs_attribution)
    a = np.where(ok, abs_attribution, 0.0)
    total = np.bincount(segment, weights=a, minlength=n_users)
    on_rules = np.bincount(segment, weights=np.where(feeds, a, 0.0), minlength=n_users)
    n_ok = np.bincount(segment, weights=ok.astype(np.float64), minlength=n_users)
    n_feed = np.bincount(segment, weights=(ok & feeds).astype(np.float64), minlength=n_users)
    with np.errstate(invalid="ignore", divide="ignore"):
        share_attr = np.where(fired_any & (total > 0), on_rules / total, np.nan)
        share_events = np.where(fired_any & (n_ok > 0), n_feed / n_ok, np.nan)
    return np.clip(share_attr, 0.0, 1.0), share_events


# ------------------------------------------------------------------ entry points
def _check_method(method: str | None, teacher: Teacher) -> str:
    if method is None:
        return "integrated_gradients" if isinstance(teacher, TorchTeacher) else "occlusion"
    if method not in METHODS and method != "deeplift":
        raise InputError(f"method must be one of {list(METHODS)}, got {method!r}")
    if method != "occlusion" and not isinstance(teacher, TorchTeacher):
        raise InputError(f"method={method!r} needs a PyTorch teacher; this one is {teacher.kind}: use "
                         "method='occlusion' (drop one event, re-score), which works for any model")
    return method


def attribute_events(teacher: Any, seqs: Sequences, user_indices: np.ndarray, method: str | None = None, *,
                     n_steps: int = IG_STEPS, batch_size: int | None = None, internal_batch_size: int | None = None,
                     max_events: int | None = MAX_OCCLUDED, time_budget: float | None = None,
                     chunk_events: int = OCCLUSION_CHUNK_EVENTS) -> EventBatch:
    """Attributions of the events of many users, in batches (no loop over users).

    Parameters
    ----------
    teacher : Teacher or model
        Wrapped by :func:`~rudi_explain.teachers.as_teacher` if needed.
    seqs : Sequences
    user_indices : array of int
        Indices into ``seqs.users``.
    method : {"integrated_gradients", "ablation", "occlusion"} or None
        None: IG for a PyTorch teacher, occlusion otherwise. (``"deeplift"``
        runs Captum's DeepLift through the same hooks as IG, for the
        benchmark's measurement only: see the module notes.)
    n_steps : int, default=32
        IG: points of the Gauss-Legendre rule along the path. On the demo GRU
        the completeness gap is about 0.1% of the score change at 32 points,
        0.2% at 16 and 0.7% at 8; the cost grows linearly.
    batch_size : int, optional
        IG and ablation: users per batch (default :data:`GRADIENT_BATCH`).
    internal_batch_size : int, optional
        IG: sequences per forward and backward pass (Captum's), bounding memory.
    max_events : int or None, default=64
        Occlusion: occlude only each user's most recent ``max_events`` events.
    time_budget : float or None
        Occlusion: seconds after which no further chunk of users is started.
    chunk_events : int, default=1,000,000
        Occlusion: events of leave-one-out variants per chunk of users (memory,
        and how often the time budget is checked); a chunk is scored in
        ``1 + max_events`` teacher calls, each user once a call under its id.

    Returns
    -------
    EventBatch
        Flat per-event arrays in ``seqs.batch_positions(user_indices)`` order.
    """
    teacher = as_teacher(teacher)
    if isinstance(teacher, GivenScores):
        raise TeacherUnavailable("the teacher is a set of given scores: there is no model to ask which events "
                                 "it leaned on")
    method = _check_method(method, teacher)
    idx = np.asarray(user_indices, dtype=np.int64)
    check_whole(n_steps, "n_steps", min_value=2)
    check_whole(max_events, "max_events", min_value=1, allow_none=True)
    if method == "occlusion":
        return occlusion(teacher, seqs, idx, None if max_events is None else int(max_events), time_budget,
                         chunk_events)
    return torch_batch(teacher, seqs, idx, method, int(n_steps), batch_size, internal_batch_size)


def teacher_of(exp: Explanation, teacher: Any, fix: str = "exp.user(uid).attribute(teacher=model)") -> Teacher:
    """The teacher to ask: the one given, else the one the explanation's job queried (``exp.inputs``).

    Raises
    ------
    TeacherUnavailable
        Saying why there is none, and ``fix``.
    """
    if teacher is not None:
        return as_teacher(teacher)
    inputs = exp.inputs
    if inputs is None:
        raise TeacherUnavailable(
            "this explanation holds no model: it was loaded from a file (models are not saved with it: no "
            f"pickle) or built without explain(); pass the model, e.g. {fix}")
    found = inputs.teacher
    if found is None or isinstance(found, GivenScores):
        raise TeacherUnavailable(
            "explain() was given the teacher's scores, not the model: there is no model to ask; pass the "
            f"model, e.g. {fix}")
    return found


def _frames(exp: Explanation, batch: EventBatch) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per event: whether it feeds a fired rule; per user: agreement and event share."""
    feeds = rule_event_mask(exp, batch.user_indices)
    fires = exp.ready_result().fires
    fired_any = fires[batch.user_indices].any(axis=1) if fires.shape[1] else \
        np.zeros(len(batch.user_indices), dtype=bool)
    agree, share = agreement(np.abs(batch.attribution), feeds, batch.segment, len(batch.user_indices), fired_any)
    return feeds, agree, share


def user_attributions(exp: Explanation, user_id: Any, method: str | None = None, *, teacher: Any = None,
                      **options: Any) -> EventAttributions:
    """One user's event attributions and rule-model agreement (``exp.user(uid).attributions``).

    Parameters
    ----------
    exp : Explanation
    user_id : object
    method : {"integrated_gradients", "ablation", "occlusion"} or None
        None: integrated gradients for a PyTorch teacher, occlusion otherwise.
    teacher : model or Teacher, optional
        The model to ask, for an explanation that holds none (given scores,
        loaded from a file). Default: the teacher :func:`explain` queried.
    **options
        Passed to :func:`attribute_events` (``n_steps``, ``max_events``, ...).

    Returns
    -------
    EventAttributions

    Raises
    ------
    TeacherUnavailable
        No model can be reached (the message says why and what to pass).
    """
    exp.ready_result()
    t = teacher_of(exp, teacher)
    i = exp.sequences.user_index(user_id)
    batch = attribute_events(t, exp.sequences, np.array([i]), method, **options)
    method = _check_method(method, t)
    feeds, agree, share = _frames(exp, batch)
    table = pd.DataFrame({"event": batch.local, "attribution": batch.attribution,
                          "attributed": np.isfinite(batch.attribution), "feeds_rule": feeds})
    for name, v in batch.columns.items():
        table[f"attribution[{name}]"] = v
    nan = float("nan")
    return EventAttributions(
        user_id=exp.sequences.users[i], method=method, events=table, agreement=float(agree[0]),
        event_share=float(share[0]), score=float(batch.score[0]) if batch.score is not None else nan,
        reference=float(batch.reference[0]) if batch.reference is not None else nan,
        delta=float(batch.delta[0]) if batch.delta is not None else nan, note=batch.note)


def agreement_summary(exp: Explanation, n_users: int | None = 200, method: str | None = None, *, held_out: bool = True,
                      teacher: Any = None, random_state: int | None = 0, time_budget: float | None = None,
                      progress: Callable[[int, int], Any] | None = None, chunk_users: int = GRADIENT_BATCH,
                      **options: Any) -> AgreementSummary:
    """Rule-model agreement over a sample of held-out users, computed in batches.

    The sample is drawn at random and attributed in chunks of
    ``chunk_users`` users in random order, so that a time budget spent
    part-way still leaves a random sample (a smaller one, which the note
    and ``n_sampled`` say).

    Parameters
    ----------
    exp : Explanation
    n_users : int or None, default=200
        Users sampled (without replacement; None: all of them).
    method : str or None
        See :func:`user_attributions`.
    held_out : bool, default=True
        Sample from the held-out users (else from all).
    teacher : model, optional
        See :func:`user_attributions`.
    random_state : int or None, default=0
        Seeds the sample and the order of its chunks.
    time_budget : float or None
        Seconds after which no further chunk is started (the first chunk
        always runs, so at least ``min(chunk_users, n_users)`` users are
        reached).
    progress : callable, optional
        Called as ``progress(users_done, users_sampled)`` after each chunk.
    chunk_users : int, default=64
        Users per call of :func:`attribute_events`.
    **options
        Passed to :func:`attribute_events` (``n_steps``, ``max_events``, ...).

    Returns
    -------
    AgreementSummary
    """
    state = exp.ready_result()
    t = teacher_of(exp, teacher)
    method = _check_method(method, t)
    check_whole(n_users, "n_users", min_value=1, allow_none=True)
    pool = np.flatnonzero(state.is_test) if held_out else np.arange(exp.sequences.n_users)
    rng = np.random.default_rng(random_state)
    n_pool = len(pool)
    if n_users is not None and n_users < len(pool):
        pool = rng.choice(pool, size=n_users, replace=False)
    pool = rng.permutation(pool)
    chunk = max(1, int(chunk_users))
    start = time.perf_counter()
    parts: list[tuple[np.ndarray, EventBatch]] = []
    notes: dict[str, None] = {}  # notes: a dict keeps their first-seen order, once each
    done = 0
    while done < len(pool):  # a loop over chunks of users, each one batched call
        part = np.sort(pool[done:done + chunk])
        batch = attribute_events(t, exp.sequences, part, method, **options)
        parts.append((part, batch))
        if batch.note:
            notes[batch.note] = None
        done += len(part)
        if progress is not None:
            progress(done, len(pool))
        if time_budget is not None and done < len(pool) and time.perf_counter() - start > time_budget:
            notes[f"time budget of {time_budget:g} s spent after {done} of {len(pool)} sampled users: "
                      f"the distribution is over those {done}, a random part of the sample"] = None
            break
    seconds = time.perf_counter() - start
    rows = []
    for part, batch in parts:
        feeds, agree, share = _frames(exp, batch)
        n_attr = np.bincount(batch.segment, weights=np.isfinite(batch.attribution), minlength=len(part))
        fired = state.fires[part].any(axis=1) if state.fires.shape[1] else np.zeros(len(part), dtype=bool)
        rows.append(pd.DataFrame({
            "_position": part, "agreement": agree, "event_share": share,
            "lift": np.divide(agree, share, out=np.full(len(part), np.nan), where=share > 0),
            "rule_fired": fired, "informative": np.isfinite(agree) & (share < INFORMATIVE_SHARE),
            "n_events": exp.sequences.lengths[part],
            "n_attributed": n_attr.astype(np.int64), "score": batch.score,
            "delta": batch.delta if batch.delta is not None else np.nan,
        }))
    per_user = pd.concat(rows, ignore_index=True).sort_values("_position", kind="stable")
    per_user.index = pd.Index(exp.sequences.users[per_user.pop("_position").to_numpy()],
                              name=exp.sequences.user_column)
    return AgreementSummary(per_user, method, seconds, "; ".join(notes), n_sampled=len(pool),
                            n_pool=n_pool)
