"""Teachers: the black-box models to explain, as "sequences in, scores out".

One verb, :meth:`Teacher.score`, turns a :class:`~rudi_explain.data.sequences.Sequences`
into one float score per user, aligned with ``seqs.users``. :func:`as_teacher`
wraps what the user has:

* a PyTorch ``nn.Module`` (:class:`TorchTeacher`): the sequences are encoded
  into padded tensors by :func:`encode_padded` (or the user's ``encode``),
  queried in batches of users under ``torch.no_grad()`` in eval mode;
* a scikit-learn estimator or pipeline (:class:`SklearnTeacher`) that takes
  Sequences directly, e.g. ``make_pipeline(SequenceAggregator(), ...)``;
* any callable from Sequences to scores (:class:`CallableTeacher`);
* scores already computed: a pandas Series indexed by user id, or an array in
  ``seqs.users`` order (:class:`GivenScores`, :func:`given_scores`).

Scores are checked once here, at the edge: a score per user, finite (NaN or
infinite scores name the users), not all equal. Errors raised by a model are
re-raised as :class:`TeacherError` naming the batch and its first users, with
the model's own exception chained as the cause.
"""

from __future__ import annotations

from collections.abc import Callable
from contextvars import ContextVar
from typing import Any

import numpy as np
import pandas as pd

from rudi_explain.data.alignment import check_order, name_users, reindex_series
from rudi_explain.data.sequences import Sequences
from rudi_explain.exceptions import InputError, InputTypeError, StateError
from rudi_explain.teachers.aggregator import align_vocabularies
from rudi_explain.validation import check_whole

__all__ = [
    "Teacher",
    "TorchTeacher",
    "SklearnTeacher",
    "CallableTeacher",
    "GivenScores",
    "TeacherError",
    "as_teacher",
    "given_scores",
    "check_scores",
    "encode_padded",
]

#: The ``should_stop`` of the :meth:`Teacher.score` call running in this thread (or context).
_SHOULD_STOP: ContextVar[Callable[[], bool] | None] = ContextVar("rudi_explain_teacher_should_stop", default=None)
#: Users per batch for a PyTorch module when ``batch_size`` is None.
TORCH_BATCH_SIZE = 256
#: How many user ids an error message names.


class TeacherError(StateError):
    """The model raised while scoring; the message names the batch and users.

    The model's own exception is the ``__cause__``.
    """


# --------------------------------------------------------------------------- helpers
def check_scores(scores: Any, users: np.ndarray, *, allow_constant: bool = False,
                 source: str = "the teacher") -> np.ndarray:
    """Check scores against the users they belong to.

    Parameters
    ----------
    scores : array-like of shape (n_users,)
    users : ndarray of shape (n_users,)
        The ids the scores belong to, in the same order (to name them in errors).
    allow_constant : bool, default=False
        Whether all-equal scores are accepted. They are not by default: there
        is nothing to explain (every statistic has zero correlation). A single
        user's score is always accepted.
    source : str
        Who produced the scores, for the messages.

    Returns
    -------
    ndarray of float64, shape (n_users,)

    Raises
    ------
    ValueError
        Wrong shape or length, non-numeric, NaN or infinite scores (naming the
        users), or constant scores.
    """
    try:
        arr = np.asarray(scores, dtype=np.float64)
    except (TypeError, ValueError) as err:
        raise InputError(f"scores from {source} are not numbers: {err}") from None
    if arr.ndim == 2 and arr.shape[1] == 1:
        arr = arr[:, 0]
    if arr.ndim != 1:
        raise InputError(f"scores from {source} must be one number per user, got an array of shape {arr.shape}")
    if len(arr) != len(users):
        raise InputError(f"{source} gave {len(arr)} scores for {len(users)} users; "
                         "scores must line up with seqs.users")
    bad = ~np.isfinite(arr)
    if bad.any():
        kinds = " or ".join(k for k, m in (("NaN", np.isnan(arr)), ("infinite", np.isinf(arr))) if m.any())
        raise InputError(f"{source} gave {kinds} scores for {int(bad.sum())} users: "
                         f"{name_users(np.asarray(users, dtype=object)[bad])}")
    if not allow_constant and len(arr) > 1 and np.all(arr == arr[0]):
        raise InputError(f"{source} gave the same score ({arr[0]:g}) to all {len(arr)} users: "
                         "there is nothing to explain")
    return arr


def given_scores(scores: pd.Series | np.ndarray | Any, seqs: Sequences, *,
                 allow_constant: bool = False, allow_extra: bool = False,
                 in_users_order: bool = False) -> np.ndarray:
    """Scores passed directly, lined up with ``seqs.users`` and checked.

    Parameters
    ----------
    scores : pandas Series indexed by user id, one-column DataFrame, or array-like of shape (n_users,)
        A Series is reindexed to ``seqs.users``: its index must hold exactly
        those ids, once each (missing or extra ids are an error naming up to
        five of them). An array carries no ids: it is refused unless
        ``in_users_order`` says it follows ``seqs.users`` (sorted ids).
    seqs : Sequences
    allow_constant : bool, default=False
        See :func:`check_scores`.
    allow_extra : bool, default=False
        Accept a Series with ids the sequences lack (scoring a subset of the
        users it covers). Missing ids are always an error.
    in_users_order : bool, default=False
        Read an array (no ids) by position in ``seqs.users`` order.

    Returns
    -------
    ndarray of float64, shape (n_users,)
        ``out[i]`` is the score of ``seqs.users[i]``.
    """
    if not isinstance(seqs, Sequences):
        raise InputTypeError(f"given_scores needs the Sequences the scores belong to, got {type(seqs).__name__}")
    if isinstance(scores, pd.DataFrame):
        if scores.shape[1] != 1:
            raise InputError(f"scores as a DataFrame must have one column, got {list(scores.columns)}")
        scores = scores.iloc[:, 0]
    check_order(scores, seqs.users, "the given scores", in_users_order)
    if isinstance(scores, pd.Series):
        scores = reindex_series(scores, seqs.users, "the given scores", allow_extra=allow_extra)
    return check_scores(scores, seqs.users, allow_constant=allow_constant, source="the given scores")


def _batches(n: int, batch_size: int | None) -> list[np.ndarray]:
    if batch_size is None or batch_size >= n:
        return [np.arange(n)]
    return [np.arange(s, min(s + batch_size, n)) for s in range(0, n, batch_size)]


def _check_batch_size(batch_size: Any) -> int | None:
    return check_whole(batch_size, "batch_size", min_value=1, allow_none=True)


def _batch_error(err: Exception, what: str, b: int, n_batches: int, users: np.ndarray) -> TeacherError:
    return TeacherError(
        f"{what} failed on batch {b + 1} of {n_batches} ({len(users)} users: {name_users(users)}): "
        f"{type(err).__name__}: {err}"
    )


# --------------------------------------------------------------------------- Teacher
class Teacher:
    """A model as "Sequences in, one score per user out".

    Subclasses implement :meth:`_raw_scores`; :meth:`score` checks the result.

    Attributes
    ----------
    kind : str
        ``"torch"``, ``"sklearn"``, ``"callable"`` or ``"given"``.
    model : object
        What was wrapped.
    """

    kind: str = ""

    def __init__(self, model: Any, *, batch_size: int | None = None) -> None:
        self.model = model
        self.batch_size = _check_batch_size(batch_size)

    def score(self, seqs: Sequences, *, allow_constant: bool = False,
              should_stop: Callable[[], bool] | None = None) -> np.ndarray:
        """One score per user.

        Parameters
        ----------
        seqs : Sequences
        allow_constant : bool, default=False
            Accept all-equal scores (see :func:`check_scores`).
        should_stop : callable, optional
            Asked before each batch of users; ``True`` stops with
            :class:`~rudi_explain.exceptions.StateError` (a caller may raise its
            own exception from it instead). A model called on all users at
            once (``batch_size=None`` for a callable or a scikit-learn model)
            is asked nothing while it runs.

        Returns
        -------
        ndarray of float64, shape (n_users,)
            ``out[i]`` is the score of ``seqs.users[i]``.

        Raises
        ------
        TeacherError
            The model raised (the message names the batch and its users).
        ValueError
            The scores are not one finite number per user, or all equal.
        """
        if not isinstance(seqs, Sequences):
            raise InputTypeError(f"a teacher scores a rudi_explain.Sequences, got {type(seqs).__name__}")
        token = _SHOULD_STOP.set(should_stop)
        try:
            raw = self._raw_scores(seqs)
        finally:
            _SHOULD_STOP.reset(token)
        return check_scores(raw, seqs.users, allow_constant=allow_constant, source=self._describe())

    __call__ = score

    def _raw_scores(self, seqs: Sequences) -> np.ndarray:
        raise NotImplementedError

    def _describe(self) -> str:
        return f"the {self.kind} teacher {type(self.model).__name__}"

    def __repr__(self) -> str:
        return f"{type(self).__name__}({type(self.model).__name__}, batch_size={self.batch_size})"

    def _score_in_batches(self, seqs: Sequences, what: str, call: Callable[[Sequences, np.ndarray], Any],
                          order: np.ndarray | None = None, pairs: bool = False) -> np.ndarray:
        """Run ``call(seqs, user_indices)`` per batch; results put back in user order.

        ``order`` permutes users before cutting batches (e.g. by length); each
        result is checked for length and written back at its users' positions.
        With ``pairs`` a batch may also give two columns; the result is then
        (n_users, 2) if any batch did (and every batch must).
        """
        n = seqs.n_users
        batches = _batches(n, self.batch_size)
        results = []
        should_stop = _SHOULD_STOP.get()
        for b, pos in enumerate(batches):
            if should_stop is not None and should_stop():
                raise StateError(f"{self._describe()} was asked to stop before batch {b + 1} of {len(batches)}")
            idx = pos if order is None else order[pos]
            users = seqs.users[idx]
            try:
                result = call(seqs, idx)
            except Exception as err:  # any model failure: say where, keep the cause
                raise _batch_error(err, what, b, len(batches), users) from err
            results.append(_as_vector(result, users, f"{self._describe()} (batch {b + 1} of {len(batches)})",
                                      pairs=pairs))
        widths = {r.ndim for r in results}
        if len(widths) > 1:
            raise InputError(f"{self._describe()} returned two columns for some batches and one for others")
        out = np.empty((n,) + results[0].shape[1:], dtype=np.float64)
        for pos, values in zip(batches, results):
            out[pos if order is None else order[pos]] = values
        return out


def _as_vector(result: Any, users: np.ndarray, source: str, pairs: bool = False) -> np.ndarray:
    """A batch's result as floats of shape (len(users),), before the finiteness checks.

    With ``pairs``, shape (len(users), 2) is kept as is.
    """
    if isinstance(result, pd.DataFrame) and result.shape[1] == 1:
        result = result.iloc[:, 0]
    if isinstance(result, pd.Series) and not isinstance(result.index, pd.RangeIndex):
        # A Series indexed by user id is aligned by id, not by position.
        return np.asarray(reindex_series(result, users, f"scores from {source}"), dtype=np.float64)
    try:
        arr = np.asarray(result, dtype=np.float64)
    except (TypeError, ValueError) as err:
        raise InputError(f"{source} returned {type(result).__name__}, not numbers: {err}") from None
    if arr.ndim == 2 and arr.shape[1] == 1:
        arr = arr[:, 0]
    if pairs and arr.ndim == 2 and arr.shape == (len(users), 2):
        return arr
    if arr.ndim != 1 or len(arr) != len(users):
        expected = f"({len(users)},), ({len(users)}, 1) or ({len(users)}, 2)" if pairs else f"({len(users)},)"
        raise InputError(f"{source} returned an array of shape {arr.shape} for {len(users)} users; "
                         f"expected shape {expected}")
    return arr


# --------------------------------------------------------------------------- given scores
class GivenScores(Teacher):
    """Scores computed elsewhere: a Series indexed by user id, or an array.

    A Series scores any Sequences whose users it covers (reindexed by id, so
    a subset of its users works too); an array only Sequences with exactly as
    many users, in ``seqs.users`` order, and only with ``in_users_order=True``
    (an array carries no ids to check). For the strict check that the scores
    cover exactly the users, use :func:`given_scores`.
    """

    kind = "given"

    def __init__(self, model: Any, *, in_users_order: bool = False) -> None:
        super().__init__(model)
        self.in_users_order = in_users_order

    def _raw_scores(self, seqs: Sequences) -> np.ndarray:
        return given_scores(self.model, seqs, allow_constant=True, allow_extra=True,
                            in_users_order=self.in_users_order)

    def _describe(self) -> str:
        return "the given scores"


# --------------------------------------------------------------------------- callable
class CallableTeacher(Teacher):
    """Any callable ``f(seqs) -> scores`` of shape (n_users,).

    It may return an array in ``seqs.users`` order or a Series indexed by user
    id. With ``batch_size`` it is called on ``seqs.subset(...)`` of that many
    users at a time.
    """

    kind = "callable"

    def _raw_scores(self, seqs: Sequences) -> np.ndarray:
        if self.batch_size is None or self.batch_size >= seqs.n_users:
            return self._score_in_batches(seqs, self._describe(), lambda s, idx: self.model(s))
        return self._score_in_batches(seqs, self._describe(), lambda s, idx: self.model(s.subset(idx)))

    def _describe(self) -> str:
        name = getattr(self.model, "__qualname__", None) or type(self.model).__name__
        return f"the callable teacher {name}"


# --------------------------------------------------------------------------- scikit-learn
_SKLEARN_METHODS = ("predict_proba", "decision_function", "predict")


class SklearnTeacher(Teacher):
    """A fitted scikit-learn estimator or pipeline that takes Sequences.

    Parameters
    ----------
    model : estimator
        Fitted; its ``predict_proba`` / ``decision_function`` / ``predict``
        receives a :class:`Sequences` (so a pipeline starts with
        :class:`~rudi_explain.teachers.aggregator.SequenceAggregator` or another
        transformer of Sequences).
    method : {"predict_proba", "decision_function", "predict"} or None, default=None
        None picks the first the model has, in that order. ``predict_proba``
        and a two-column ``decision_function`` score the positive class: the
        last of ``classes_`` (sklearn's convention; class 1 for 0/1 labels).
        More than two classes is an error: pass a callable that reduces them.
    batch_size : int or None, default=None
        Users per call (None: all at once; the aggregator is vectorized).
    """

    kind = "sklearn"

    def __init__(self, model: Any, *, method: str | None = None, batch_size: int | None = None) -> None:
        super().__init__(model, batch_size=batch_size)
        if method is None:
            method = next((m for m in _SKLEARN_METHODS if hasattr(model, m)), None)
            if method is None:
                raise InputTypeError(f"{type(model).__name__} has none of {', '.join(_SKLEARN_METHODS)}")
        elif method not in _SKLEARN_METHODS:
            raise InputError(f"method must be one of {_SKLEARN_METHODS} or None, got {method!r}")
        elif not hasattr(model, method):
            raise InputError(f"{type(model).__name__} has no {method}")
        self.method = method
        _check_fitted(model)

    def _raw_scores(self, seqs: Sequences) -> np.ndarray:
        fn = getattr(self.model, self.method)
        whole = self.batch_size is None or self.batch_size >= seqs.n_users
        return self._score_in_batches(
            seqs, f"{type(self.model).__name__}.{self.method}",
            lambda s, idx: self._positive(fn(s if whole else s.subset(idx))))

    def _positive(self, out: Any) -> np.ndarray:
        arr = np.asarray(out)
        if arr.ndim == 2 and arr.shape[1] > 1:
            if arr.shape[1] > 2:
                raise InputError(
                    f"{self.method} gave {arr.shape[1]} columns (a multi-class model); rudi-explain "
                    "explains one score per user: pass a callable that returns it")
            # The positive class is the last of classes_, as sklearn orders them.
            return arr[:, 1]
        return arr

    def _describe(self) -> str:
        return f"the scikit-learn teacher {type(self.model).__name__}.{self.method}"


def _check_fitted(model: Any) -> None:
    try:
        from sklearn.base import BaseEstimator
        from sklearn.exceptions import NotFittedError
        from sklearn.utils.validation import check_is_fitted
    except ImportError:  # pragma: no cover - sklearn is a dependency
        return
    if isinstance(model, BaseEstimator):
        try:
            check_is_fitted(model)
        except NotFittedError as err:
            raise InputError(f"the scikit-learn model {type(model).__name__} is not fitted: call fit first") from err


# --------------------------------------------------------------------------- PyTorch
def encode_padded(seqs: Sequences, user_indices: np.ndarray | None = None, max_len: int | None = None, *,
                  categorical: list[str] | None = None, numerical: list[str] | None = None,
                  vocabularies: dict[str, Any] | None = None) -> tuple[Any, Any, Any]:
    """Padded tensors of some users' events: the default PyTorch encoding.

    Parameters
    ----------
    seqs : Sequences
    user_indices : array of int of shape (B,), optional
        Indices into ``seqs.users``; all users when omitted. Row ``b`` of every
        tensor belongs to ``seqs.users[user_indices[b]]``.
    max_len : int or None, default=None
        Keep at most the *last* ``max_len`` events of each user (the most
        recent ones); None keeps all (T is then the longest length).
    categorical, numerical : list of str, optional
        Columns and their order (default: all of ``seqs``, in its order).
    vocabularies : dict of str to sequence of str, optional
        Vocabularies the codes refer to, usually the model's training ones;
        ``seqs`` is recoded to them first (see
        :func:`~rudi_explain.teachers.aggregator.align_vocabularies`).

    Returns
    -------
    cat_codes : LongTensor of shape (B, T, n_cat)
        Category code + 1: ``0`` is padding, ``1..V`` the vocabulary in order
        and ``V + 1`` an unseen category (so an ``nn.Embedding(V + 2, d,
        padding_idx=0)`` covers every value).
    num_values : FloatTensor of shape (B, T, 2 * n_num)
        The first ``n_num`` channels are the values with NaN replaced by 0;
        the last ``n_num`` are 1.0 where the value is missing (NaN), else 0.
        Padding is 0 in both.
    lengths : LongTensor of shape (B,)
        Events kept per user (``1 <= lengths <= T``); events sit at positions
        ``0 .. lengths - 1`` in time order, padding after.

    Notes
    -----
    The default forward convention of a module wrapped by :func:`as_teacher`
    is ``forward(cat_codes, num_values, lengths)`` returning ``(B,)``,
    ``(B, 1)`` or ``(B, 2)`` scores.
    """
    import torch

    categorical = list(seqs.categorical) if categorical is None else list(categorical)
    numerical = list(seqs.numerical) if numerical is None else list(numerical)
    for column in numerical:
        if column not in seqs.values:
            raise InputError(f"numerical column {column!r} is missing from the sequences (numerical {seqs.numerical})")
    for column in categorical:
        if column not in seqs.codes:
            raise InputError(f"categorical column {column!r} is missing from the sequences "
                             f"(categorical {seqs.categorical})")
    if vocabularies is not None:
        seqs = align_vocabularies(seqs, {c: vocabularies[c] for c in categorical if c in vocabularies})
    idx = np.arange(seqs.n_users) if user_indices is None else np.asarray(user_indices, dtype=np.int64)
    starts, ends = seqs.offsets[idx], seqs.offsets[idx + 1]
    lengths = ends - starts
    if max_len is not None:
        if max_len < 1:
            raise InputError(f"max_len must be positive, got {max_len!r}")
        # Keep the most recent events: they say most about the current risk.
        lengths = np.minimum(lengths, max_len)
        starts = ends - lengths
    n, t = len(idx), int(lengths.max()) if len(idx) else 0
    # Scatter positions: row b, column j <- event starts[b] + j, for j < lengths[b].
    total = int(lengths.sum())
    row = np.repeat(np.arange(n), lengths)
    col = np.arange(total) - np.repeat(np.cumsum(lengths) - lengths, lengths)
    src = np.repeat(starts, lengths) + col
    cat = np.zeros((n, t, len(categorical)), dtype=np.int64)
    for j, column in enumerate(categorical):  # a loop over columns, not users
        codes = seqs.codes[column][src].astype(np.int64)
        cat[row, col, j] = np.where(codes < 0, len(seqs.vocabularies[column]) + 1, codes + 1)
    num = np.zeros((n, t, 2 * len(numerical)), dtype=np.float32)
    k = len(numerical)
    for j, column in enumerate(numerical):
        values = seqs.values[column][src]
        missing = np.isnan(values)
        num[row, col, j] = np.where(missing, 0.0, values)
        num[row, col, k + j] = missing
    return torch.from_numpy(cat), torch.from_numpy(num), torch.from_numpy(lengths.astype(np.int64))


class TorchTeacher(Teacher):
    """A PyTorch module queried in batches of users.

    Parameters
    ----------
    model : torch.nn.Module
        Called as ``model(*encode(seqs, user_indices))`` (a dict from
        ``encode`` is passed as keyword arguments, a single tensor as the one
        argument). The default ``encode`` is :func:`encode_padded`, so the
        forward convention is ``forward(cat_codes, num_values, lengths)``;
        it honours optional module attributes ``max_len`` (truncation),
        ``categorical_``, ``numerical_`` (column order) and ``vocabularies_``
        (the training vocabularies), as
        :func:`~rudi_explain.teachers.demo_gru.train_demo_gru` sets them.
        The output, per batch, is ``(B,)`` or ``(B, 1)``: the score as is;
        or ``(B, 2)``: two class columns, scored as class 1. If every row of
        the ``(n, 2)`` output lies in [0, 1] and sums to 1 they are taken as
        probabilities and the score is ``p[:, 1]``; otherwise as logits and
        the score is ``out[:, 1] - out[:, 0]``, the log-odds of class 1 under
        softmax. Either way users rank as by class 1's probability.
    encode : callable ``(seqs, user_indices) -> tuple of tensors``, optional
    batch_size : int or None, default=None
        Users per forward pass (None: :data:`TORCH_BATCH_SIZE`). Users are
        sorted by length before cutting batches, to limit padding; the
        scores come back in ``seqs.users`` order.
    device : str or torch.device, optional
        Where the inputs go; default the device of the module's first
        parameter (or buffer), else CPU. The module itself is never moved.
    num_threads : int or None, default=None
        Intra-op threads torch uses while scoring, restored afterwards. None:
        the module's ``num_threads`` attribute if it has one (the demo GRU
        sets 1), else torch's setting is left alone. 1 is often fastest for
        small recurrent models on CPU, whose many tiny steps gain nothing from
        more threads (10x faster than 2 threads seen on 2 busy cores).

    Notes
    -----
    Scoring runs under ``torch.no_grad()`` with every submodule in eval mode
    (dropout off); each submodule's previous training flag is restored
    afterwards, also when the model raises.
    """

    kind = "torch"

    def __init__(self, model: Any, *, encode: Callable[..., Any] | None = None,
                 batch_size: int | None = None, device: Any = None, num_threads: int | None = None) -> None:
        super().__init__(model, batch_size=TORCH_BATCH_SIZE if batch_size is None else batch_size)
        self.num_threads = check_whole(num_threads, "num_threads", min_value=1, allow_none=True)
        if encode is not None and not callable(encode):
            raise InputTypeError(f"encode must be a callable (seqs, user_indices) -> tensors, "
                                 f"got {type(encode).__name__}")
        self.encode = encode
        self.device = device

    def default_encode(self, seqs: Sequences, idx: np.ndarray) -> tuple[Any, ...]:
        """The module's inputs for users ``idx`` when no ``encode`` is given: :func:`encode_padded`
        with the module's ``max_len``, ``categorical_``, ``numerical_`` and ``vocabularies_``."""
        m = self.model
        return encode_padded(seqs, idx, getattr(m, "max_len", None),
                             categorical=getattr(m, "categorical_", None),
                             numerical=getattr(m, "numerical_", None),
                             vocabularies=getattr(m, "vocabularies_", None))

    def batch_encoder(self) -> Callable[[Sequences, np.ndarray], Any]:
        """What turns users ``idx`` of ``seqs`` into the module's inputs: ``encode`` if given,
        else :meth:`default_encode`."""
        return self.encode or self.default_encode

    def model_device(self) -> Any:
        """The torch device the module runs on: ``device`` if given, else its parameters'."""
        import torch

        if self.device is not None:
            return torch.device(self.device)
        for tensor in self.model.parameters():
            return tensor.device
        for tensor in self.model.buffers():
            return tensor.device
        return torch.device("cpu")

    def _raw_scores(self, seqs: Sequences) -> np.ndarray:
        import torch

        device = self.model_device()
        encode = self.batch_encoder()
        # Similar lengths in a batch waste less padding (stable: ties keep user order).
        order = np.argsort(seqs.lengths, kind="stable")

        def forward(s: Sequences, idx: np.ndarray) -> np.ndarray:
            out = _call_module(self.model, encode(s, idx), device)
            if not isinstance(out, torch.Tensor):
                raise InputTypeError(f"the module returned {type(out).__name__}, expected one tensor of shape "
                                "(B,), (B, 1) or (B, 2)")
            return out.detach().to("cpu", torch.float64).numpy()

        modes = [(m, m.training) for m in self.model.modules()]
        threads = torch.get_num_threads()
        try:
            wanted = self.num_threads if self.num_threads is not None else getattr(self.model, "num_threads", None)
            if wanted is not None:
                torch.set_num_threads(int(wanted))
            self.model.eval()
            with torch.no_grad():
                scores = self._score_in_batches(seqs, f"{type(self.model).__name__}.forward", forward,
                                                order, pairs=True)
        finally:
            torch.set_num_threads(threads)
            for module, training in modes:
                module.training = training
        if scores.ndim == 2:
            finite = scores[np.isfinite(scores).all(axis=1)]
            probabilities = bool(((finite >= 0) & (finite <= 1)).all()) and \
                np.allclose(finite.sum(axis=1), 1.0, atol=1e-4)
            scores = scores[:, 1] if probabilities else scores[:, 1] - scores[:, 0]
        return scores


def _call_module(model: Any, inputs: Any, device: Any) -> Any:
    import torch

    def move(x: Any) -> Any:
        return x.to(device) if isinstance(x, torch.Tensor) else x

    if isinstance(inputs, torch.Tensor):
        return model(move(inputs))
    if isinstance(inputs, dict):
        return model(**{k: move(v) for k, v in inputs.items()})
    if isinstance(inputs, (tuple, list)):
        return model(*(move(x) for x in inputs))
    raise InputTypeError(f"encode returned {type(inputs).__name__}; expected a tuple of tensors, a dict or a tensor")


# --------------------------------------------------------------------------- dispatch
def _is_torch_module(model: Any) -> bool:
    # By the names of the model's classes, not by torch itself: importing torch costs seconds,
    # and another thread may be importing it right now (explain() imports it beside the search),
    # leaving a half-built module in sys.modules.
    return any(c.__module__ == "torch.nn.modules.module" and c.__name__ == "Module" for c in type(model).__mro__)


def as_teacher(model: Any, *, encode: Callable[..., Any] | None = None, method: str | None = None,
               batch_size: int | None = None, device: Any = None, num_threads: int | None = None,
               in_users_order: bool = False) -> Teacher:
    """Wrap a model as a :class:`Teacher`.

    Parameters
    ----------
    model : torch.nn.Module, scikit-learn estimator, callable, pandas Series, array-like or Teacher
        What to explain, tried in this order:

        * a :class:`Teacher`: returned as is;
        * a pandas Series (indexed by user id) or array: :class:`GivenScores`;
        * a ``torch.nn.Module``: :class:`TorchTeacher` (see it for the
          forward convention and how two-column outputs are scored);
        * an object with ``predict_proba``, ``decision_function`` or
          ``predict`` (a scikit-learn estimator or pipeline taking
          Sequences): :class:`SklearnTeacher`;
        * any other callable ``f(seqs) -> scores``: :class:`CallableTeacher`.
    encode : callable ``(seqs, user_indices) -> tuple of tensors``, optional
        PyTorch only: replaces :func:`encode_padded`.
    method : str, optional
        scikit-learn only: ``"predict_proba"``, ``"decision_function"`` or
        ``"predict"`` instead of the first available in that order.
    batch_size : int, optional
        Users per call. Default: 256 for PyTorch, all users at once otherwise.
    device : str or torch.device, optional
        PyTorch only: where the inputs go (default: the module's device).
    num_threads : int, optional
        PyTorch only: torch's intra-op threads while scoring, restored
        afterwards (see :class:`TorchTeacher`).
    in_users_order : bool, default=False
        Given scores only: an array (no user ids) is read by position in
        ``seqs.users`` order; without this flag it is refused.

    Returns
    -------
    Teacher
        ``teacher.score(seqs)`` gives an ndarray of shape (n_users,).

    Examples
    --------
    >>> teacher = as_teacher(lambda s: s.lengths.astype(float))
    >>> teacher.kind
    'callable'
    """
    if model is None:
        raise InputError("there is no model to explain: pass a model, or the scores themselves (scores=...)")
    torch_only = {"encode": encode, "device": device, "num_threads": num_threads}
    used_torch_only = [k for k, v in torch_only.items() if v is not None]
    if isinstance(model, Teacher):
        return model
    if isinstance(model, (pd.Series, pd.DataFrame, np.ndarray, list)):
        _reject(used_torch_only + (["method"] if method is not None else []), "given scores")
        return GivenScores(model, in_users_order=in_users_order)
    if _is_torch_module(model):
        _reject(["method"] if method is not None else [], "a PyTorch module")
        return TorchTeacher(model, encode=encode, batch_size=batch_size, device=device, num_threads=num_threads)
    if any(hasattr(model, m) for m in _SKLEARN_METHODS):
        _reject(used_torch_only, "a scikit-learn model")
        return SklearnTeacher(model, method=method, batch_size=batch_size)
    if callable(model):
        _reject(used_torch_only + (["method"] if method is not None else []), "a callable")
        return CallableTeacher(model, batch_size=batch_size)
    raise InputTypeError(
        f"cannot use a {type(model).__module__}.{type(model).__name__} as a teacher: pass a torch.nn.Module, "
        "a fitted scikit-learn estimator or pipeline that takes Sequences, a callable seqs -> scores, "
        "or the scores (a pandas Series indexed by user id)"
    )


def _reject(options: list[str], what: str) -> None:
    if options:
        raise InputError(f"{', '.join(options)} do(es) not apply to {what}")
