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
  callable teachers): drop one event, re-score the user. All leave-one-out
  variants of many users are built as one :class:`Sequences` and scored in
  one teacher call per chunk. Bounded: only each user's most recent
  ``max_events`` events are occluded (the others get NaN, ``attributed`` is
  False), and a ``time_budget`` stops between chunks (the users not reached
  get NaN, and :attr:`EventAttributions.note` says so).

The attribution of an event is its share of ``score(user) - score(user
without it)`` (occlusion, ablation) or of ``score(user) - score(baseline)``
(IG), in the teacher's score unit (for the demo GRU: logits).
"""

from __future__ import annotations

import copy
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from rudi_explain.data.alignment import name_users
from rudi_explain.data.sequences import Sequences
from rudi_explain.exceptions import InputError, InputTypeError, StateError
from rudi_explain.rules.formula import formula_literals
from rudi_explain.rules.ruleset import LinearTerm
from rudi_explain.statistics.frame import EventFrame
from rudi_explain.statistics.operators import RowOperator
from rudi_explain.teachers.adapters import GivenScores, Teacher, TeacherError, TorchTeacher, as_teacher

__all__ = ["EventAttributions", "AgreementSummary", "METHODS", "attribute_events", "user_attributions",
           "agreement_summary", "rule_event_mask", "output_events", "agreement", "TeacherUnavailable"]

#: Method names, for ``method=``.
METHODS = ("integrated_gradients", "ablation", "occlusion")
#: IG's integration points by default (see :func:`attribute_events`).
IG_STEPS = 32
#: Users per IG or ablation batch: with 32 steps, 64 users are 2,048 sequences per forward and backward pass.
GRADIENT_BATCH = 64
#: Events occluded per user by default: the most recent ones (the demo GRU reads 64).
MAX_OCCLUDED = 64
#: Events of leave-one-out variants scored in one teacher call (bounds memory).
OCCLUSION_CHUNK_EVENTS = 1_000_000


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
    def column_attributions(self) -> pd.Series:
        """Total attribution per data column (gradient methods; empty otherwise)."""
        cols = [c for c in self.events.columns if c.startswith("attribution[")]
        return pd.Series({c[len("attribution["):-1]: float(self.events[c].sum()) for c in cols}, dtype=np.float64)

    def __repr__(self) -> str:
        n = int(self.events["attributed"].sum())
        return (f"EventAttributions({self.user_id!r}, {self.method}: {n} of {len(self.events)} events attributed, "
                f"agreement {self.agreement:.2f} (events the rules read: {self.event_share:.2f} of them))"
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
        ``n_events``, ``n_attributed``, ``score``, ``delta`` (IG only).
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

    @property
    def quantiles(self) -> pd.Series:
        """Agreement at the 10th, 25th, 50th, 75th and 90th percentiles (defined users only)."""
        a = self.per_user["agreement"].dropna()
        return a.quantile([0.1, 0.25, 0.5, 0.75, 0.9]) if len(a) else pd.Series(dtype=np.float64)

    @property
    def deciles(self) -> pd.Series:
        """Agreement at the 10th, 20th, ..., 90th percentiles (users with a defined agreement; linear interpolation)."""
        a = self.per_user["agreement"].dropna()
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
        a = self.per_user["agreement"].dropna().to_numpy(dtype=np.float64)
        counts, edges = np.histogram(a, bins=bins, range=(0.0, 1.0))
        return counts.astype(np.int64), edges

    def describe(self) -> dict:
        """Figures for a summary view: users, defined users, mean, median and quartiles of both shares."""
        a = self.per_user["agreement"].dropna()
        share = self.per_user.loc[a.index, "event_share"]
        return {"method": self.method, "n_users": int(len(self.per_user)), "n_defined": int(len(a)),
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
        undefined = int(self.per_user["agreement"].isna().sum())
        dec = self.deciles
        return out | {
            "n_sampled": int(self.n_sampled or len(self.per_user)), "n_pool": int(self.n_pool),
            "n_no_rule": self.n_no_rule, "n_zero": undefined - self.n_no_rule,
            "deciles": [round(float(x), 4) for x in dec] if len(dec) else None,
            "counts": [int(c) for c in counts], "edges": [round(float(e), 4) for e in edges],
        }

    def __repr__(self) -> str:
        d = self.describe()
        mean = "undefined" if d["agreement_mean"] is None else f"mean {d['agreement_mean']:.2f}, median " \
            f"{d['agreement_median']:.2f}"
        return (f"AgreementSummary({self.method}: {d['n_users']} users, {d['n_defined']} with a defined agreement, "
                f"{mean}; no rule fired for {self.n_no_rule})" + (f"; {self.note}" if self.note else ""))


@dataclass
class _Batch:
    """Attributions of many users, flat over their events (``Sequences.batch_positions`` order)."""

    user_indices: np.ndarray
    segment: np.ndarray            # user (position in user_indices) of each event
    local: np.ndarray              # event position within its user, time order
    attribution: np.ndarray        # NaN where not attributed
    columns: dict = field(default_factory=dict)   # column name -> per-event attribution
    score: np.ndarray | None = None
    reference: np.ndarray | None = None
    delta: np.ndarray | None = None
    note: str = ""


# ------------------------------------------------------------------ which events the rules read
def _rule_outputs(exp: Any) -> np.ndarray:
    """Boolean (n_rules, n_outputs): the statistic outputs each rule reads."""
    L = exp.literals
    out = np.zeros((len(exp.rules), len(L.output_statistic)), dtype=bool)
    for k, rule in enumerate(exp.rules):
        if isinstance(rule, LinearTerm):
            out[k, rule.column] = True
        else:
            for lit in formula_literals(rule.formula):
                out[k, int(L.column[lit.index])] = True
    return out


def rule_event_mask(exp: Any, user_indices: np.ndarray, counted: bool = True) -> np.ndarray:
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
    seqs = exp.sequences
    idx = np.asarray(user_indices, dtype=np.int64)
    positions, segment = seqs.batch_positions(idx)
    mask = np.zeros(len(positions), dtype=bool)
    if not len(exp.rules) or not len(idx):
        return mask
    used = (exp._fires[idx].astype(np.int64) @ _rule_outputs(exp).astype(np.int64)) > 0   # (B, n_outputs)
    # Flat index of a global event position of batch user b: block start + position within the user.
    block_start = np.zeros(len(idx), dtype=np.int64)
    np.cumsum(seqs.lengths[idx][:-1], out=block_start[1:])
    L = exp.literals
    for c in np.flatnonzero(used.any(axis=0)):  # a loop over statistic outputs, not users
        who = np.flatnonzero(used[:, c])
        kept, seg = output_events(exp, idx[who], int(c), counted=counted)
        users = idx[who][seg]
        mask[block_start[who][seg] + kept - seqs.offsets[users]] = True
    return mask


def output_events(exp: Any, user_indices: np.ndarray, column: int, counted: bool = True
                  ) -> tuple[np.ndarray, np.ndarray]:
    """The events statistic output ``column`` reads for each of ``user_indices``.

    Its row operators run on those users' events; a ``GroupBy`` output keeps
    its group and, with ``counted``, a one-hot output its category (``Count``
    ignores the selection). Returns the events' positions in ``exp.sequences``
    and, for each, which of ``user_indices`` it belongs to.
    """
    seqs, L = exp.sequences, exp.literals
    stat = exp.statistics[int(L.output_statistic[column])]
    frame = EventFrame.batch(seqs, np.asarray(user_indices, dtype=np.int64))
    for op in stat.operators[1:-1]:
        if isinstance(op, RowOperator):
            frame = op.apply(frame)
    kept, seg = np.asarray(frame.positions, dtype=np.int64), frame.segment.astype(np.int64)
    k = int(L.output_index[column])
    q = len(seqs.vocabularies[stat.group]) if stat.group is not None else 1
    if stat.group is not None and q and stat.n_outputs(seqs) % q == 0:
        # Outputs run selected category first, then group: k = s * q + g.
        keep = seqs.codes[stat.group][kept] == k % q
        kept, seg = kept[keep], seg[keep]
    if counted and stat.selected in seqs.codes and not stat.aggregation.ignores_selection:
        keep = seqs.codes[stat.selected][kept] == k // q
        kept, seg = kept[keep], seg[keep]
    return kept, seg


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


# ------------------------------------------------------------------ occlusion
def _variants(seqs: Sequences, positions: np.ndarray, segment: np.ndarray, n_variants: int) -> Sequences:
    """A Sequences of ``n_variants`` synthetic users (ids 0..n-1) made of the given events.

    A shallow copy keeps vocabularies, units and the reference time (so time
    statistics are measured as for the real users); every per-event array is
    taken at ``positions``.
    """
    new = copy.copy(seqs)
    new.users = np.arange(n_variants, dtype=np.int64)
    new.event_user = segment.astype(np.int32)
    new.offsets = np.zeros(n_variants + 1, dtype=np.int64)
    np.cumsum(np.bincount(segment, minlength=n_variants), out=new.offsets[1:])
    new.times = None if seqs.times is None else seqs.times[positions]
    new.input_row = seqs.input_row[positions]
    new.codes = {k: v[positions] for k, v in seqs.codes.items()}
    new.values = {k: v[positions] for k, v in seqs.values.items()}
    new._user_position = None
    new._cache = {}
    return new


def _occlusion(teacher: Teacher, seqs: Sequences, idx: np.ndarray, max_events: int | None,
               time_budget: float | None, chunk_events: int = OCCLUSION_CHUNK_EVENTS) -> _Batch:
    n = seqs.lengths[idx].astype(np.int64)
    positions, segment = seqs.batch_positions(idx)
    block_start = np.zeros(len(idx), dtype=np.int64)
    np.cumsum(n[:-1], out=block_start[1:])
    local = np.arange(len(positions), dtype=np.int64) - block_start[segment]
    attribution = np.full(len(positions), np.nan)
    score = np.full(len(idx), np.nan)
    # Occluded: the most recent m events; a single-event user has no non-empty variant.
    m = np.where(n >= 2, n if max_events is None else np.minimum(n, max_events), 0)
    cost = (m + 1) * n
    start, notes, reached = time.perf_counter(), [], len(idx)
    b0 = 0
    while b0 < len(idx):
        # Users [b0, b1): at least one, then as many as fit in chunk_events.
        b1 = b0 + max(1, int(np.searchsorted(np.cumsum(cost[b0:]), chunk_events, side="right")))
        users = np.arange(b0, b1)
        # Variant v: batch user var_b[v] without its event var_drop[v] (-1: the user as is).
        var_b = np.repeat(users, m[users] + 1)
        first = np.repeat(np.cumsum(m[users] + 1) - (m[users] + 1), m[users] + 1)
        k = np.arange(len(var_b)) - first                    # 0 = original, then the occluded events
        var_drop = np.where(k == 0, -1, n[var_b] - m[var_b] + k - 1)
        pos, seg = seqs.batch_positions(idx[var_b])
        within = pos - seqs.offsets[idx[var_b]][seg]
        keep = within != var_drop[seg]
        variants = _variants(seqs, pos[keep], seg[keep], len(var_b))
        try:
            s = teacher.score(variants, allow_constant=True)
        except TeacherError as err:  # its user ids are variant numbers: name the real users
            raise TeacherError(f"scoring the leave-one-out variants of users {name_users(seqs.users[idx[users]])} "
                               f"failed: {err}") from err.__cause__
        original = k == 0
        score[var_b[original]] = s[original]
        dropped = ~original
        # A user's variants come together, the user as is first (at chunk offset `first`).
        attribution[block_start[var_b[dropped]] + var_drop[dropped]] = s[first[dropped]] - s[dropped]
        b0 = b1
        if time_budget is not None and b0 < len(idx) and time.perf_counter() - start > time_budget:
            reached = b0
            notes.append(f"time budget of {time_budget:g} s spent after {b0} of {len(idx)} users: "
                         f"the other {len(idx) - b0} users were not occluded (NaN)")
            break
    if max_events is not None and (n[:reached] > max_events).any():
        notes.append(f"only the most recent {max_events} events of a user are occluded (max_events); "
                     "older events have NaN")
    if (n[:reached] == 1).any():
        notes.append("a user with a single event has no variant without it: NaN")
    return _Batch(idx, segment, local, attribution, {}, score, None, None, "; ".join(notes))


# ------------------------------------------------------------------ PyTorch: IG and ablation
def _reduce(out: Any, probabilities: bool | None) -> Any:
    """The teacher's score from a module output, as :class:`TorchTeacher` reads it."""
    if out.ndim == 2 and out.shape[1] == 1:
        return out[:, 0]
    if out.ndim == 2 and out.shape[1] == 2:
        return out[:, 1] if probabilities else out[:, 1] - out[:, 0]
    if out.ndim != 1:
        raise InputError(f"the module returned shape {tuple(out.shape)}; expected (B,), (B, 1) or (B, 2)")
    return out


def _is_probabilities(out: Any) -> bool | None:
    if out.ndim == 2 and out.shape[1] == 2:
        finite = out[~(~out.isfinite()).any(dim=1)]
        return bool(((finite >= 0) & (finite <= 1)).all()) and bool(
            ((finite.sum(dim=1) - 1).abs() <= 1e-4).all())
    return None


class _Inputs:
    """An encoding's tensors, and how to call the module with a replacement for some of them."""

    def __init__(self, encoded: Any) -> None:
        import torch

        if isinstance(encoded, torch.Tensor):
            self.names, self.tensors, self.single = None, [encoded], True
        elif isinstance(encoded, dict):
            self.names, self.tensors, self.single = list(encoded), list(encoded.values()), False
        elif isinstance(encoded, (tuple, list)):
            self.names, self.tensors, self.single = None, list(encoded), False
        else:
            raise InputTypeError(f"encode returned {type(encoded).__name__}; expected a tuple of tensors, a dict or a "
                            "tensor")

    def call(self, model: Any, tensors: list) -> Any:
        if self.single:
            return model(tensors[0])
        if self.names is not None:
            return model(**dict(zip(self.names, tensors)))
        return model(*tensors)


class _Replay:
    """``forward(*attributed, *all_inputs) -> scores``: the module with some inputs and embedding outputs replaced.

    Float event tensors are replaced as inputs; embedding outputs through
    forward hooks that return the given tensor instead of the lookup (what
    Captum's ``LayerIntegratedGradients`` does), so that gradients reach the
    embedded categories.
    """

    def __init__(self, model: Any, inputs: _Inputs, float_slots: list[int], embeddings: list,
                 probabilities: bool | None) -> None:
        self.model, self.inputs = model, inputs
        self.float_slots, self.embeddings = float_slots, embeddings
        self.probabilities = probabilities
        self.overrides: dict = {}

    def hook(self, module: Any, args: Any, output: Any) -> Any:
        return self.overrides.get(module, output)

    def __call__(self, *args: Any) -> Any:
        n_f, n_e = len(self.float_slots), len(self.embeddings)
        attributed, originals = args[:n_f + n_e], list(args[n_f + n_e:])
        for slot, x in zip(self.float_slots, attributed[:n_f]):
            originals[slot] = x
        self.overrides = dict(zip(self.embeddings, attributed[n_f:]))
        try:
            return _reduce(self.inputs.call(self.model, originals), self.probabilities)
        finally:
            self.overrides = {}


class _TorchContext:
    """Eval mode, gradients on, the module's threads; cuDNN's RNN backward needs training mode, given here
    only to recurrent layers without dropout (so nothing random runs), else cuDNN is switched off."""

    def __init__(self, teacher: TorchTeacher, device: Any) -> None:
        self.teacher, self.device = teacher, device

    def __enter__(self) -> _TorchContext:
        import torch

        model = self.teacher.model
        self.modes = [(m, m.training) for m in model.modules()]
        self.threads = torch.get_num_threads()
        wanted = self.teacher.num_threads if self.teacher.num_threads is not None else getattr(model, "num_threads",
                                                                                               None)
        if wanted is not None:
            torch.set_num_threads(int(wanted))
        model.eval()
        self.cudnn = None
        if self.device.type == "cuda":
            rnns = [m for m in model.modules() if isinstance(m, torch.nn.RNNBase)]
            if all(float(getattr(m, "dropout", 0.0)) == 0.0 for m in rnns):
                for m in rnns:
                    m.training = True
            else:
                self.cudnn = torch.backends.cudnn.flags(enabled=False)
                self.cudnn.__enter__()
        self.grad = torch.enable_grad()
        self.grad.__enter__()
        return self

    def __exit__(self, *exc: Any) -> None:
        import torch

        self.grad.__exit__(*exc)
        if self.cudnn is not None:
            self.cudnn.__exit__(*exc)
        torch.set_num_threads(self.threads)
        for module, training in self.modes:
            module.training = training


def _column_names(teacher: TorchTeacher, seqs: Sequences) -> tuple[list[str], list[str]] | None:
    """Categorical and numerical columns of the default encoding, in its order; None for a custom encode."""
    if teacher.encode is not None:
        return None
    m = teacher.model
    return (list(getattr(m, "categorical_", None) or seqs.categorical),
            list(getattr(m, "numerical_", None) or seqs.numerical))


def _torch_batch(teacher: TorchTeacher, seqs: Sequences, idx: np.ndarray, method: str, n_steps: int,
                 batch_size: int | None, internal_batch_size: int | None) -> _Batch:
    import torch
    model = teacher.model
    device = teacher._model_device()
    encode = teacher.encode or teacher._default_encode
    max_len = getattr(model, "max_len", None)
    n = seqs.lengths[idx].astype(np.int64)
    read = n if max_len is None else np.minimum(n, int(max_len))
    positions, segment = seqs.batch_positions(idx)
    block_start = np.zeros(len(idx), dtype=np.int64)
    np.cumsum(n[:-1], out=block_start[1:])
    local = np.arange(len(positions), dtype=np.int64) - block_start[segment]
    attribution = np.full(len(positions), np.nan)
    columns: dict[str, np.ndarray] = {}
    score, reference, delta = np.full(len(idx), np.nan), np.full(len(idx), np.nan), np.full(len(idx), np.nan)
    names = _column_names(teacher, seqs)
    per_batch = batch_size or GRADIENT_BATCH
    order = np.argsort(n, kind="stable")  # similar lengths together: less padding
    embeddings_all = [m for m in model.modules() if isinstance(m, torch.nn.Embedding)]
    notes: set[str] = set()

    with _TorchContext(teacher, device):
        for s0 in range(0, len(idx), per_batch):  # a loop over batches of users
            rows = order[s0:s0 + per_batch]
            inputs = _Inputs(encode(seqs, idx[rows]))
            tensors = [t.to(device) if isinstance(t, torch.Tensor) else t for t in inputs.tensors]
            B = len(rows)
            event_like = [i for i, t in enumerate(tensors) if isinstance(t, torch.Tensor) and t.ndim >= 2
                          and t.shape[0] == B]
            if not event_like:
                raise InputError("the encoding has no tensor of shape (users, events, ...) to attribute")
            T = int(tensors[event_like[0]].shape[1])
            if int(read[rows].max()) > T:
                raise InputError(f"the encoding holds {T} events per user, but users of this batch have up to "
                                 f"{int(read[rows].max())} and the module has no max_len saying how many it keeps: "
                                 "set model.max_len to the encoding's truncation (the most recent events are kept)")
            float_slots = [i for i in event_like if tensors[i].is_floating_point()]
            int_slots = [i for i in event_like if not tensors[i].is_floating_point()]
            baseline_tensors = [torch.zeros_like(t) if i in event_like else t for i, t in enumerate(tensors)]

            seen, seen_base, y, y_base, probabilities = _probe(model, inputs, tensors, baseline_tensors,
                                                               embeddings_all)
            if method == "ablation":
                per_event, per_column = _ablate(model, inputs, tensors, baseline_tensors, event_like, probabilities,
                                                B, T, internal_batch_size)
            else:
                embeddings = _replaceable(embeddings_all, seen, B, T)
                emb_names = [_embedding_name(j, seen[e][0][0], tensors, int_slots, names)
                             for j, e in enumerate(embeddings)]
                xs = tuple(tensors[i] for i in float_slots) + tuple(seen[e][0][1] for e in embeddings)
                bs = tuple(baseline_tensors[i] for i in float_slots) + tuple(seen_base[e][0][1] for e in embeddings)
                got = _integrate(model, inputs, tensors, float_slots, embeddings, probabilities, xs, bs, method,
                                 n_steps, internal_batch_size)
                per_event, per_column = np.zeros((B, T)), {}
                for slot, g in zip(float_slots, got[:len(float_slots)]):
                    g = g.reshape(B, T, -1)
                    for c, name in enumerate(_channel_names(slot, g.shape[2], names)):
                        per_column[name] = per_column.get(name, 0.0) + g[..., c].numpy()
                for name, g in zip(emb_names, got[len(float_slots):]):
                    per_column[name] = per_column.get(name, 0.0) + g.reshape(B, T, -1).sum(dim=2).numpy()
                for v in per_column.values():
                    per_event += v
                delta[rows] = per_event.sum(axis=1) - (y - y_base).to("cpu", torch.float64).numpy()
                reference[rows] = y_base.to("cpu", torch.float64).numpy()
            score[rows] = y.to("cpu", torch.float64).numpy()

            # Tensor position t of batch row r is the user's event n - read + t (the most recent `read`).
            r = np.repeat(np.arange(B), read[rows])
            t = np.arange(int(read[rows].sum())) - np.repeat(np.cumsum(read[rows]) - read[rows], read[rows])
            flat = block_start[rows][r] + (n[rows] - read[rows])[r] + t
            attribution[flat] = per_event[r, t]
            for name, v in per_column.items():
                columns.setdefault(name, np.full(len(positions), np.nan))[flat] = v[r, t]
            if (read[rows] < n[rows]).any():
                notes.add(f"the model reads only the last {max_len} events of a user (max_len): older events "
                          "are not attributed (NaN)")
    return _Batch(idx, segment, local, attribution, columns, score,
                  reference if method != "ablation" else None, delta if method != "ablation" else None,
                  "; ".join(sorted(notes)))


def _probe(model: Any, inputs: _Inputs, tensors: list, baseline_tensors: list, embeddings: list) -> tuple:
    """One forward pass at the input and one at the baseline, recording every embedding's input and output.

    Returns ``(seen, seen_base, y, y_base, probabilities)``: per embedding the
    list of its calls ``(input, output)``, the scores, and how a two-column
    output is read (see :class:`TorchTeacher`).
    """
    import torch

    captured: dict = {}

    def record(module: Any, args: Any, output: Any) -> None:
        captured.setdefault(module, []).append((args[0] if args else None, output))

    hooks = [e.register_forward_hook(record) for e in embeddings]
    try:
        with torch.no_grad():
            out = inputs.call(model, tensors)
            seen = dict(captured)
            captured.clear()
            out_base = inputs.call(model, baseline_tensors)
            seen_base = dict(captured)
    finally:
        for h in hooks:
            h.remove()
    probabilities = _is_probabilities(out)
    return seen, seen_base, _reduce(out, probabilities).detach(), _reduce(out_base, probabilities).detach(), \
        probabilities


def _replaceable(embeddings: list, seen: dict, B: int, T: int) -> list:
    """The embeddings that embed the events: called once, with an output of shape (B, T, ...)."""
    out = []
    for e in embeddings:
        calls = seen.get(e, [])
        if len(calls) > 1:
            raise NotImplementedError(f"the embedding {e} is called {len(calls)} times in one forward pass: its "
                                      "output cannot be replaced for integrated gradients; use method='ablation' "
                                      "or 'occlusion'")
        if len(calls) == 1 and calls[0][1].ndim >= 3 and tuple(calls[0][1].shape[:2]) == (B, T):
            out.append(e)
    return out


def _embedding_name(j: int, codes: Any, tensors: list, int_slots: list[int], names: tuple | None) -> str:
    """The data column an embedding embeds: found by matching its input against the encoding's code columns."""
    import torch

    for i in int_slots:
        t = tensors[i]
        for c in range(t.shape[2] if t.ndim == 3 else 0):
            if codes is not None and codes.shape == t[..., c].shape and torch.equal(codes, t[..., c]):
                return names[0][c] if names is not None and i == 0 and c < len(names[0]) else f"input {i}[{c}]"
    return f"embedding {j}"


def _channel_names(i: int, width: int, names: tuple | None) -> list[str]:
    """A name per channel of float tensor ``i``: the numerical column, for the default encoding."""
    if names is not None and i == 1 and width == 2 * len(names[1]):
        return names[1] + names[1]  # value channels, then missing flags, of each column
    return [f"input {i}[{c}]" for c in range(width)]


def _ablate(model: Any, inputs: _Inputs, tensors: list, baseline_tensors: list, event_like: list[int],
            probabilities: bool | None, B: int, T: int, internal_batch_size: int | None) -> tuple[np.ndarray, dict]:
    """Captum's FeatureAblation with one feature per event (all its tensors and channels): (B, T) attributions."""
    import torch
    from captum.attr import FeatureAblation

    steps = torch.arange(T, device=tensors[event_like[0]].device)
    masks = tuple(steps.reshape([1, T] + [1] * (tensors[i].ndim - 2)).expand_as(tensors[i]).contiguous()
                  for i in event_like)
    rest = [i for i in range(len(tensors)) if i not in event_like]

    def forward(*xs: Any) -> Any:
        full = list(tensors)
        for i, x in zip(event_like + rest, xs):
            full[i] = x
        return _reduce(inputs.call(model, full), probabilities)

    got = FeatureAblation(forward).attribute(
        tuple(tensors[i] for i in event_like), baselines=tuple(baseline_tensors[i] for i in event_like),
        additional_forward_args=tuple(tensors[i] for i in rest) or None, feature_mask=masks,
        perturbations_per_eval=max(1, (internal_batch_size or 4096) // B))
    return got[0].reshape(B, T, -1)[..., 0].detach().to("cpu", torch.float64).numpy(), {}


def _integrate(model: Any, inputs: _Inputs, tensors: list, float_slots: list[int], embeddings: list,
               probabilities: bool | None, xs: tuple, bs: tuple, method: str, n_steps: int,
               internal_batch_size: int | None) -> list:
    """IG (or, for the measurement, DeepLift) at the float inputs and the embedding outputs; on the CPU."""
    import torch
    from captum.attr import DeepLift, IntegratedGradients

    replay = _Replay(model, inputs, float_slots, embeddings, probabilities)
    hooks = [e.register_forward_hook(replay.hook) for e in embeddings]
    try:
        if method == "integrated_gradients":
            got = IntegratedGradients(replay).attribute(xs, baselines=bs, additional_forward_args=tuple(tensors),
                                                        n_steps=n_steps, internal_batch_size=internal_batch_size)
        else:  # deeplift: measured in the benchmark, not offered
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                got = DeepLift(_as_module(replay)).attribute(xs, baselines=bs, additional_forward_args=tuple(tensors))
    finally:
        for h in hooks:
            h.remove()
    return [g.detach().to("cpu", torch.float64) for g in got]


def _as_module(replay: _Replay) -> Any:
    """The replayed teacher as an ``nn.Module`` (DeepLift wants one)."""
    import torch

    class Wrapped(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            # A submodule, so that DeepLift finds (and hooks) the teacher's nonlinearities.
            self.inner = replay.model

        def forward(self, *args: Any) -> Any:
            return replay(*args)

    return Wrapped()


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
                     chunk_events: int = OCCLUSION_CHUNK_EVENTS) -> _Batch:
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
        Occlusion: events of leave-one-out variants per teacher call (memory,
        and how often the time budget is checked).

    Returns
    -------
    _Batch
        Flat per-event arrays in ``seqs.batch_positions(user_indices)`` order.
    """
    teacher = as_teacher(teacher)
    if isinstance(teacher, GivenScores):
        raise TeacherUnavailable("the teacher is a set of given scores: there is no model to ask which events "
                                 "it leaned on")
    method = _check_method(method, teacher)
    idx = np.asarray(user_indices, dtype=np.int64)
    if isinstance(n_steps, bool) or not isinstance(n_steps, (int, np.integer)) or n_steps < 2:
        raise InputError(f"n_steps must be a whole number >= 2, got {n_steps!r}")
    if max_events is not None and (isinstance(max_events, bool) or not isinstance(max_events, (int, np.integer))
                                   or max_events < 1):
        raise InputError(f"max_events must be a positive whole number or None, got {max_events!r}")
    if method == "occlusion":
        return _occlusion(teacher, seqs, idx, max_events, time_budget, chunk_events)
    return _torch_batch(teacher, seqs, idx, method, int(n_steps), batch_size, internal_batch_size)


def _teacher_of(exp: Any, teacher: Any, fix: str = "exp.user(uid).attribute(teacher=model)") -> Teacher:
    """The teacher to ask: the one given, else the one the explanation's job queried.

    Raises :class:`TeacherUnavailable` saying why there is none, and ``fix``.
    """
    if teacher is not None:
        return as_teacher(teacher)
    job = getattr(exp, "_job_args", None)
    if job is None:
        raise TeacherUnavailable(
            "this explanation holds no model: it was loaded from a file (models are not saved with it: no "
            f"pickle) or built without explain(); pass the model, e.g. {fix}")
    found = job[0]
    if found is None or isinstance(found, GivenScores):
        raise TeacherUnavailable(
            "explain() was given the teacher's scores, not the model: there is no model to ask; pass the "
            f"model, e.g. {fix}")
    return found


def _frames(exp: Any, batch: _Batch, method: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per event: whether it feeds a fired rule; per user: agreement and event share."""
    feeds = rule_event_mask(exp, batch.user_indices)
    fired_any = exp._fires[batch.user_indices].any(axis=1) if exp._fires.shape[1] else \
        np.zeros(len(batch.user_indices), dtype=bool)
    agree, share = agreement(np.abs(batch.attribution), feeds, batch.segment, len(batch.user_indices), fired_any)
    return feeds, agree, share


def user_attributions(exp: Any, user_id: Any, method: str | None = None, *, teacher: Any = None,
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
    exp._ready()
    t = _teacher_of(exp, teacher)
    i = exp.sequences.user_index(user_id)
    batch = attribute_events(t, exp.sequences, np.array([i]), method, **options)
    method = _check_method(method, t)
    feeds, agree, share = _frames(exp, batch, method)
    table = pd.DataFrame({"event": batch.local, "attribution": batch.attribution,
                          "attributed": np.isfinite(batch.attribution), "feeds_rule": feeds})
    for name, v in batch.columns.items():
        table[f"attribution[{name}]"] = v
    nan = float("nan")
    return EventAttributions(
        user_id=exp.sequences.users[i], method=method, events=table, agreement=float(agree[0]),
        event_share=float(share[0]), score=float(batch.score[0]),
        reference=float(batch.reference[0]) if batch.reference is not None else nan,
        delta=float(batch.delta[0]) if batch.delta is not None else nan, note=batch.note)


def agreement_summary(exp: Any, n_users: int | None = 200, method: str | None = None, *, held_out: bool = True,
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
    exp._ready()
    t = _teacher_of(exp, teacher)
    method = _check_method(method, t)
    if n_users is not None and (isinstance(n_users, bool) or not isinstance(n_users, (int, np.integer))
                                or n_users < 1):
        raise InputError(f"n_users must be a positive whole number or None, got {n_users!r}")
    pool = np.flatnonzero(exp.is_test) if held_out else np.arange(exp.sequences.n_users)
    rng = np.random.default_rng(random_state)
    n_pool = len(pool)
    if n_users is not None and n_users < len(pool):
        pool = rng.choice(pool, size=n_users, replace=False)
    pool = rng.permutation(pool)
    chunk = max(1, int(chunk_users))
    start = time.perf_counter()
    parts, notes = [], {}  # notes: a dict keeps their first-seen order, once each
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
        feeds, agree, share = _frames(exp, batch, method)
        n_attr = np.bincount(batch.segment, weights=np.isfinite(batch.attribution), minlength=len(part))
        fired = exp._fires[part].any(axis=1) if exp._fires.shape[1] else np.zeros(len(part), dtype=bool)
        rows.append(pd.DataFrame({
            "_position": part, "agreement": agree, "event_share": share,
            "lift": np.divide(agree, share, out=np.full(len(part), np.nan), where=share > 0),
            "rule_fired": fired, "n_events": exp.sequences.lengths[part],
            "n_attributed": n_attr.astype(np.int64), "score": batch.score,
            "delta": batch.delta if batch.delta is not None else np.nan,
        }))
    per_user = pd.concat(rows, ignore_index=True).sort_values("_position", kind="stable")
    per_user.index = pd.Index(exp.sequences.users[per_user.pop("_position").to_numpy()],
                              name=exp.sequences.user_column)
    return AgreementSummary(per_user, method, seconds, "; ".join(notes), n_sampled=len(pool),
                            n_pool=n_pool)
