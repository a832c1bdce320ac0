"""User behaviour sequences laid out as sorted columnar arrays.

A :class:`Sequences` holds a long event table (one row per event) as numpy
arrays sorted by (user, time), with per-user offsets, so that a statistic can
be evaluated for every user at once with segment reductions. Categorical
columns are stored as integer codes into a sorted vocabulary; numerical
columns as float64 with NaN for missing values.

It is also a sized collection of users: ``len(seqs)`` users, and ``seqs[idx]``
the users at the positions ``idx`` (an integer array or list, a slice, or a
boolean mask) in that order, so that scikit-learn's model selection
(``cross_val_score``, ``GridSearchCV``, ``train_test_split``) splits it as it
splits the rows of an array.
"""

from __future__ import annotations

import numbers
import warnings
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from rudi_explain.data import coerce as _coerce
from rudi_explain.data.alignment import name_users
from rudi_explain.data.sorting import by_user_then
from rudi_explain.data.times import bad_time_cell, refuse_infinite_times
from rudi_explain.exceptions import IndexOutOfRange, InputError, InputTypeError, UnknownUserError
from rudi_explain.validation import check_whole

__all__ = ["Sequences", "NA_CATEGORY", "UNSEEN_CODE", "OTHER_CATEGORY", "MAX_CATEGORIES"]

#: How a missing categorical value is shown and stored in a vocabulary.
NA_CATEGORY = "<NA>"
#: The code of a category that the vocabulary lacks: it matches no value.
UNSEEN_CODE = -1
#: The category that the rarest values of a column with too many categories are lumped into.
OTHER_CATEGORY = "<other>"
#: Default bound on the categories of one column (``Sequences(max_categories=...)``).
MAX_CATEGORIES = 1000
#: A column with at least this many distinct values per event looks like ids or
#: timestamps: lumping would leave nearly every event in "other".
_ID_LIKE_SHARE = 0.5


def _category_string(value: Any) -> str:
    """The string form under which a categorical value enters a vocabulary."""
    if value is None or (not isinstance(value, str) and pd.isna(value)):
        return NA_CATEGORY
    return str(value)


def _plain(value: Any) -> Any:
    """A numpy scalar as the Python value, so that messages read ``1``, not ``np.int64(1)``."""
    return value.item() if isinstance(value, np.generic) else value


def _as_name_list(arg: str | Iterable[str] | None, what: str) -> list[str] | None:
    if arg is None:
        return None
    if isinstance(arg, str):
        return [arg]
    names = list(arg)
    for name in names:
        if not isinstance(name, str):
            raise InputTypeError(f"{what} must name columns by string, got {name!r}")
    return names


def _finite(values: np.ndarray, name: str, users: pd.Series) -> np.ndarray:
    """``values``, refused when some are infinite (NaN, missing, is fine)."""
    inf = np.isinf(values)
    if inf.any():
        who = pd.unique(users.to_numpy()[inf])
        raise InputError(
            f"numerical column {name!r} has {int(inf.sum()):,} infinite values, for users {name_users(who)}: "
            "replace them before explaining (with NaN for a missing value, or a finite bound)"
        )
    return values


#: longest unit text: a unit is a word or symbol, not a sentence
MAX_UNIT_LENGTH = 24


def _check_units(units: Any, numerical: Iterable[str]) -> dict[str, str]:
    """The ``units`` mapping checked: numerical columns only, short non-empty text."""
    if units is None:
        return {}
    if not isinstance(units, Mapping):
        raise InputTypeError(f"units must be a mapping of column name to unit text, got {type(units).__name__}")
    numerical = list(numerical)
    out = {}
    for name, unit in units.items():
        if name not in numerical:
            raise InputError(f"units names column {name!r}, which is not a numerical column "
                             f"(numerical: {numerical})")
        if not isinstance(unit, str) or not unit.strip() or len(unit) > MAX_UNIT_LENGTH \
                or any(ch in unit for ch in "\n\r\t"):
            raise InputError(f"the unit of column {name!r} must be one line of 1 to {MAX_UNIT_LENGTH} "
                             f"characters, got {unit!r}")
        out[str(name)] = unit.strip()
    return out


class Sequences:
    """Event sequences of many users, checked, typed and sorted.

    Parameters
    ----------
    data : pandas.DataFrame or mapping of user id to DataFrame
        A long table with one row per event, or one frame per user (the user
        column is then added from the mapping's keys).
    user : str, default="user_id"
        The column holding user ids.
    time : str or None, default="ts"
        The column that orders each user's events (numbers or datetimes). Ties
        keep their input order. ``None`` keeps the input order.
    categorical, numerical : list of str or None, default=None
        The columns of each kind. ``None`` infers them from the remaining
        columns: strings, booleans and pandas categoricals are categorical,
        numbers are numerical.
    vocabularies : mapping of str to sequence of str, optional
        Vocabularies to encode categorical columns with, usually those of the
        training sequences (``other.vocabularies``). Values they lack become
        "unseen" (code ``-1``): they match no ``RetainBy``/``FilterBy`` value
        and add to no one-hot dimension. If a vocabulary holds
        :data:`OTHER_CATEGORY` (a lumped column), values it lacks join it.
    reference_time : scalar or None, default=None
        The time at which time statistics are measured ("now" for
        ``Recency``, the end of a ``Within`` window): a datetime (anything
        ``pandas.Timestamp`` reads; time zones are converted to UTC) for a
        datetime time column, a number for a numerical one. ``None`` takes
        the latest event time in the data. Give it when comparing data sets
        (training and new events), so that both are measured at one time.
    max_categories : int or None, default=1000
        Bound on the categories of one categorical column (the search's cost
        grows with them). A column with more is refused when it has nearly one
        value per event (at least half as many values as events: it looks
        like ids or timestamps, and the message says which); otherwise its
        ``max_categories - 1`` most frequent values are kept and the others
        lumped into :data:`OTHER_CATEGORY`, with a warning naming the column.
        ``None`` sets no bound.
    units : mapping of str to str, optional
        The unit of each numerical column that has one (``{"amount": "EUR",
        "duration": "min"}``), shown after the thresholds of the statistics
        measured in it ("total amount ... is more than 400 EUR"). At most
        24 characters each; counts, shares and 0/1 outputs never get one.

    Attributes
    ----------
    users : ndarray of shape (n_users,)
        User ids, sorted (``seqs[idx]`` keeps the order of ``idx``); every
        per-user array lines up with it.
    offsets : ndarray of shape (n_users + 1,)
        Events of user ``i`` are the positions ``offsets[i]:offsets[i + 1]``.
    event_user : ndarray of shape (n_events,)
        The user index of each event.
    codes : dict of str to ndarray of int32
        Category codes of each categorical column (``-1`` for unseen).
    values : dict of str to ndarray of float64
        Values of each numerical column.
    vocabularies : dict of str to tuple of str
        Sorted vocabulary of each categorical column.
    times : ndarray or None
        The sorted time column, or None without one.
    reference_time : numpy.datetime64, numpy.timedelta64, float or None
        The reference time of time statistics, of the time column's type
        (see the parameter); None without a time column.
    units : dict of str to str
        The units given, by numerical column.
    input_row : ndarray of shape (n_events,)
        Position of each event in the input table.

    Notes
    -----
    Refused at this boundary, before any work, naming the column and users:

    * infinite values in a numerical column (NaN means missing; an infinite
      value has no place on a threshold scale): replace them first;
    * user ids that are not text or whole numbers (datetimes, bytes, tuples,
      booleans, fractional floats). Floats that are all whole numbers (ids
      read from a CSV with missing cells elsewhere) become integers;
    * repeated column names, cells holding lists or dicts, and a categorical
      column holding both missing values and the text ``"<NA>"``.

    A numeric column spoiled by a few cells (``'12,5'``), integer category codes,
    time cells that are not times, infinite times and complex columns are warned
    about or refused, naming the cells: see :mod:`~rudi_explain.data.coerce`, :mod:`~rudi_explain.data.times`.

    A Sequences is a sized collection of users (see :meth:`__getitem__`):
    ``len(seqs)`` is ``n_users`` and ``seqs.shape`` is ``(n_users,)``, and
    ``seqs[idx]`` holds the users at positions ``idx`` in that order, so that
    scikit-learn's cross-validation and search split it by users::

        cross_val_score(make_pipeline(SequenceAggregator(in_users_order=True), model), seqs, y)

    with ``y`` in ``seqs.users`` order.
    """

    def __init__(
        self,
        data: pd.DataFrame | Mapping[Any, pd.DataFrame],
        user: str = "user_id",
        time: str | None = "ts",
        categorical: Iterable[str] | None = None,
        numerical: Iterable[str] | None = None,
        *,
        vocabularies: Mapping[str, Sequence[str]] | None = None,
        reference_time: Any = None,
        max_categories: int | None = MAX_CATEGORIES,
        units: Mapping[str, str] | None = None,
    ) -> None:
        frame = self._as_frame(data, user)
        if frame.columns.has_duplicates:
            dup = frame.columns[frame.columns.duplicated()].unique().tolist()
            raise InputError(f"column names repeat in the data: {dup}; give every column its own name")
        check_whole(max_categories, "max_categories", min_value=2, allow_none=True)
        categorical = _as_name_list(categorical, "categorical")
        numerical = _as_name_list(numerical, "numerical")
        if not isinstance(user, str):
            raise InputTypeError(f"user must be a column name, got {user!r}")
        if user not in frame.columns:
            raise InputError(
                f"user column {user!r} is not in the data; columns are {list(frame.columns)}"
            )
        if time is not None and time not in frame.columns:
            raise InputError(
                f"time column {time!r} is not in the data; columns are {list(frame.columns)} "
                "(pass time=None to keep the input order)"
            )
        if len(frame) == 0:
            raise InputError("the event table is empty: there is no event to explain")
        categorical, numerical = self._resolve_columns(frame, user, time, categorical, numerical)

        user_codes, users = self._encode_users(frame[user], user)
        time_key, time_values = self._time_key(frame, time)
        # Stable sort: events of a user in time order, ties kept in input order.
        order = by_user_then(user_codes, len(users), time_key)
        self.user_column = user
        self.time_column = time
        self.users = users
        self.event_user = user_codes[order].astype(np.int32, copy=False)
        counts = np.bincount(self.event_user, minlength=len(users))
        self.offsets = np.zeros(len(users) + 1, dtype=np.int64)
        np.cumsum(counts, out=self.offsets[1:])
        self.times = None if time_values is None else time_values[order]
        self.reference_time = self._reference_time(reference_time, self.times, time)
        self.input_row = order.astype(np.int64, copy=False)

        self.vocabularies: dict[str, tuple[str, ...]] = {}
        self.codes: dict[str, np.ndarray] = {}
        for name in categorical:
            given = None if vocabularies is None else vocabularies.get(name)
            vocab, codes = self._encode_categorical(frame[name], given, name)
            if given is None and max_categories is not None and len(vocab) > max_categories:
                vocab, codes = self._bound_categories(frame[name], name, vocab, codes, max_categories)
            self.vocabularies[name] = vocab
            self.codes[name] = codes[order]
        self.values: dict[str, np.ndarray] = {}
        for name in numerical:
            self.values[name] = self._encode_numerical(frame[name], name, frame[user])[order]
        self.units = _check_units(units, numerical)
        self._user_position: dict[Any, int] | None = None
        self._cache: dict[Any, np.ndarray] = {}

    @classmethod
    def from_duckdb(cls, query: Any, connection: Any = None, user: str = "user_id", time: str | None = "ts",
                    **params: Any) -> Sequences:
        """Sequences from a DuckDB query: SQL text (run on ``connection``, by default DuckDB's
        own in-memory one) or a relation (``con.sql(...)``, ``con.table(...)``).

        The result is read into memory: filter it in the query (``WHERE user_id IN (...)``), or let
        :class:`~rudi_explain.sql.warehouse.EventTable` draw a sample of users from a larger table.
        The rows keep the query's order as the input order (add ``ORDER BY`` to fix ties in time);
        ``params`` go to the constructor.
        """
        import duckdb

        if isinstance(query, str):
            relation = (connection if connection is not None else duckdb).sql(query)
        elif isinstance(query, duckdb.DuckDBPyRelation):
            relation = query
        else:
            raise InputTypeError(f"from_duckdb needs SQL text or a DuckDB relation, got {type(query).__name__}")
        if relation is None:
            raise InputError("the query returns no rows to read (is it a SELECT?)")
        return cls(relation.df(), user=user, time=time, **params)

    # ------------------------------------------------------------------ input
    @staticmethod
    def _as_frame(data: Any, user: str) -> pd.DataFrame:
        if isinstance(data, pd.DataFrame):
            return data
        if isinstance(data, Mapping):
            if len(data) == 0:
                raise InputError("the mapping of per-user frames is empty: there is no event to explain")
            parts = []
            for uid, part in data.items():
                if not isinstance(part, pd.DataFrame):
                    raise InputTypeError(f"events of user {uid!r} must be a DataFrame, got {type(part).__name__}")
                if user in part.columns:
                    raise InputError(
                        f"the frame of user {uid!r} already has a {user!r} column; "
                        "pass one long table instead of a mapping"
                    )
                parts.append(part.assign(**{user: np.full(len(part), uid, dtype=object)}))
            return pd.concat(parts, ignore_index=True)
        raise InputTypeError(
            f"Sequences needs a pandas DataFrame or a mapping of user id to DataFrame, got {type(data).__name__}"
        )

    @staticmethod
    def _resolve_columns(
        frame: pd.DataFrame,
        user: str,
        time: str | None,
        categorical: list[str] | None,
        numerical: list[str] | None,
    ) -> tuple[list[str], list[str]]:
        reserved = {user} | ({time} if time is not None else set())
        for kind, names in (("categorical", categorical), ("numerical", numerical)):
            for name in names or []:
                if name not in frame.columns:
                    raise InputError(f"{kind} column {name!r} is not in the data; columns are {list(frame.columns)}")
                if name in reserved:
                    raise InputError(f"column {name!r} is the user or time column and cannot also be {kind}")
        if categorical is not None and numerical is not None:
            both = sorted(set(categorical) & set(numerical))
            if both:
                raise InputError(f"column {both[0]!r} is listed as both categorical and numerical")
        fixed = set(categorical or []) | set(numerical or [])
        inferred_cat: list[str] = []
        inferred_num: list[str] = []
        for name in frame.columns:
            if name in reserved or name in fixed:
                continue
            if not isinstance(name, str):
                raise InputTypeError(f"column names must be strings, got {name!r}")
            dtype = frame[name].dtype
            if pd.api.types.is_bool_dtype(dtype) or isinstance(dtype, pd.CategoricalDtype) or \
                    pd.api.types.is_object_dtype(dtype) or pd.api.types.is_string_dtype(dtype):
                # Numbers but for a few bad cells: numerical (the cells read as missing, with a warning).
                numeric = numerical is None and _coerce.numbers_but_a_few(frame[name])
                (inferred_num if numeric else inferred_cat).append(name)
            elif pd.api.types.is_numeric_dtype(dtype):
                inferred_num.append(name)
            elif categorical is None and numerical is None:
                raise InputTypeError(
                    f"column {name!r} has type {dtype} that is neither categorical nor numerical; "
                    "drop it or list the columns to use with categorical= and numerical="
                )
        if categorical is None:
            for name in inferred_cat:
                _coerce.warn_if_mostly_numeric(frame, name, user)
        maybe_codes = inferred_num if numerical is None else []
        categorical = list(categorical) if categorical is not None else inferred_cat
        numerical = list(numerical) if numerical is not None else inferred_num
        _coerce.refuse_complex(frame, numerical)
        for name in categorical + numerical:
            if not isinstance(name, str):
                raise InputTypeError(f"column names must be strings, got {name!r}")
        if len(set(categorical)) != len(categorical) or len(set(numerical)) != len(numerical):
            raise InputError("a column is listed twice")
        if not categorical and not numerical:
            raise InputError("there is no categorical or numerical column to compute statistics of")
        _coerce.warn_code_columns(frame, maybe_codes, categorical, numerical, stacklevel=4)
        return categorical, numerical

    @staticmethod
    def _encode_users(column: pd.Series, name: str) -> tuple[np.ndarray, np.ndarray]:
        missing = column.isna().to_numpy()
        if missing.any():
            row = _plain(column.index[np.flatnonzero(missing)[0]])
            raise InputError(f"user column {name!r} has a missing user id at row {row!r}")
        column = _coerce.user_ids(column, name)
        codes, uniques = pd.factorize(column, sort=True)
        users = np.asarray(uniques, dtype=column.dtype if pd.api.types.is_integer_dtype(column.dtype) else object)
        return codes.astype(np.int64, copy=False), users

    @staticmethod
    def _time_key(frame: pd.DataFrame, time: str | None) -> tuple[np.ndarray | None, np.ndarray | None]:
        if time is None:
            return None, None
        column = frame[time]
        dtype = column.dtype
        if pd.api.types.is_datetime64_any_dtype(dtype):
            if isinstance(dtype, pd.DatetimeTZDtype):
                column = column.dt.tz_convert("UTC").dt.tz_localize(None)
            values = column.to_numpy(dtype="datetime64[ns]")
            key = values.view(np.int64)
            missing = np.isnat(values)
        elif pd.api.types.is_timedelta64_dtype(dtype):
            values = column.to_numpy(dtype="timedelta64[ns]")
            key = values.view(np.int64)
            missing = np.isnat(values)
        elif pd.api.types.is_numeric_dtype(dtype) and not pd.api.types.is_bool_dtype(dtype):
            values = column.to_numpy(dtype=np.float64)
            refuse_infinite_times(values, column, time)
            key = values
            missing = np.isnan(values)
        else:
            try:
                values = pd.to_datetime(column, format="ISO8601").to_numpy(dtype="datetime64[ns]")
            except (ValueError, TypeError, OverflowError):
                # Name the cell at fault (its row and why), not the column's first value.
                raise InputTypeError(
                    f"time column {time!r} cannot be ordered: it has type {dtype} and {bad_time_cell(column, time)}"
                ) from None
            key = values.view(np.int64)
            missing = np.isnat(values)
        if missing.any():
            row = _plain(frame.index[np.flatnonzero(missing)[0]])
            raise InputError(f"time column {time!r} has a missing value at row {row!r}: events cannot be ordered")
        return key, values

    @staticmethod
    def _reference_time(value: Any, times: np.ndarray | None, time: str | None) -> Any:
        """The reference time as a scalar of the time column's type (see the class docs)."""
        if times is None:
            if value is not None:
                raise InputError("reference_time needs a time column; time=None was given")
            return None
        if value is None:
            return times.max()  # the latest event in the data
        ref: np.datetime64 | np.timedelta64 | float
        try:
            if isinstance(value, (bool, np.bool_)):
                raise TypeError
            if times.dtype.kind == "M":
                stamp = pd.Timestamp(value)
                if stamp.tzinfo is not None:
                    stamp = stamp.tz_convert("UTC").tz_localize(None)
                ref = np.datetime64(stamp.as_unit("ns").to_datetime64(), "ns")
            elif times.dtype.kind == "m":
                ref = np.timedelta64(pd.Timedelta(value).as_unit("ns").to_timedelta64(), "ns")
            else:
                ref = float(value)
        except (TypeError, ValueError, OverflowError):
            kind = {"M": "datetime", "m": "timedelta"}.get(times.dtype.kind, "numerical")
            raise InputTypeError(
                f"reference_time {value!r} does not fit the {kind} time column {time!r}"
            ) from None
        if np.isnat(ref) if times.dtype.kind in "mM" else np.isnan(ref):
            raise InputError(f"reference_time must be a time, got {value!r}")
        return ref

    @staticmethod
    def _encode_categorical(
        column: pd.Series, vocabulary: Sequence[str] | None, name: str = "?"
    ) -> tuple[tuple[str, ...], np.ndarray]:
        try:
            codes, uniques = pd.factorize(column, use_na_sentinel=True)
        except TypeError:
            bad = np.flatnonzero(column.map(lambda v: isinstance(v, (list, dict, set))).to_numpy())
            i = int(bad[0]) if len(bad) else 0
            raise InputTypeError(
                f"categorical column {name!r} holds a {type(column.iloc[i]).__name__} at row "
                f"{_plain(column.index[i])!r} ({str(column.iloc[i])[:60]}); cells must be single values"
            ) from None
        strings = [_category_string(v) for v in uniques]
        if (codes < 0).any():
            if NA_CATEGORY in strings:
                raise InputError(
                    f"categorical column {name!r} holds the text {NA_CATEGORY!r} as well as missing values; "
                    f"both would show as {NA_CATEGORY}: rename the text or fill the missing values"
                )
            strings.append(NA_CATEGORY)
            codes = np.where(codes < 0, len(strings) - 1, codes)
        if vocabulary is None:
            vocab = tuple(sorted(set(strings)))
        else:
            vocab = tuple(vocabulary)
        position = {v: i for i, v in enumerate(vocab)}
        # Values a lumped vocabulary lacks join its "other" category, as in training.
        absent = position.get(OTHER_CATEGORY, UNSEEN_CODE) if vocabulary is not None else UNSEEN_CODE
        # Two raw values may share one string form (1 and "1"): both map to it.
        remap = np.array([position.get(s, absent) for s in strings], dtype=np.int32)
        return vocab, remap[codes] if len(remap) else np.zeros(len(codes), dtype=np.int32)

    @staticmethod
    def _bound_categories(column: pd.Series, name: str, vocab: tuple[str, ...], codes: np.ndarray,
                          max_categories: int) -> tuple[tuple[str, ...], np.ndarray]:
        """Refuse an id- or time-like column; lump the rarest categories of another."""
        n_events, n_values = len(codes), len(vocab)
        if n_values >= _ID_LIKE_SHARE * n_events:
            looks = _coerce.looks_like(column)
            examples = ", ".join(repr(v) for v in vocab[:3])
            advice = {"time-like": "pass it as the time column (time=..., --time) or drop it",
                      "numeric": "fix the cells that are not numbers, or list it in numerical=",
                      "id-like": "drop it, or map it to a coarser category first"}[looks]
            if looks == "numeric":
                bad = np.flatnonzero(pd.to_numeric(column.astype(str), errors="coerce").isna().to_numpy()
                                     & column.notna().to_numpy())
                if len(bad):
                    advice += (f" (such as {_plain(column.iloc[bad[0]])!r} at row "
                               f"{_plain(column.index[bad[0]])!r})")
            raise InputError(
                f"categorical column {name!r} has {n_values:,} distinct values in {n_events:,} events "
                f"(such as {examples}): it looks {looks}, not like a category; {advice}"
            )
        counts = np.bincount(codes, minlength=n_values)
        # The most frequent first; ties in vocabulary order (stable sort).
        keep = np.sort(np.argsort(-counts, kind="stable")[: max_categories - 1])
        kept = [vocab[k] for k in keep]
        new_vocab = tuple(sorted(set(kept) | {OTHER_CATEGORY}))
        position = {v: i for i, v in enumerate(new_vocab)}
        remap = np.full(n_values, position[OTHER_CATEGORY], dtype=np.int32)
        remap[keep] = [position[v] for v in kept]
        warnings.warn(
            f"categorical column {name!r} has {n_values:,} categories, more than max_categories="
            f"{max_categories:,}: its {n_values - len(kept):,} rarest ({int(counts.sum() - counts[keep].sum()):,} "
            f"events) are lumped into {OTHER_CATEGORY!r}",
            UserWarning, stacklevel=4,
        )
        return new_vocab, remap[codes]

    @staticmethod
    def _encode_numerical(column: pd.Series, name: str, users: pd.Series) -> np.ndarray:
        if pd.api.types.is_bool_dtype(column.dtype):
            return column.to_numpy(dtype=np.float64)
        if pd.api.types.is_numeric_dtype(column.dtype):
            return _finite(column.to_numpy(dtype=np.float64, na_value=np.nan), name, users)
        # A few cells that are not numbers read as missing, with one warning; more are refused.
        return _finite(_coerce.read_numbers(column, name, users, stacklevel=4), name, users)

    # ------------------------------------------------------------- accessors
    @property
    def n_users(self) -> int:
        """Number of users."""
        return len(self.users)

    @property
    def n_events(self) -> int:
        """Number of events."""
        return len(self.event_user)

    @property
    def categorical(self) -> list[str]:
        """Names of the categorical columns."""
        return list(self.codes)

    @property
    def numerical(self) -> list[str]:
        """Names of the numerical columns."""
        return list(self.values)

    @property
    def columns(self) -> list[str]:
        """All categorical and numerical column names."""
        return self.categorical + self.numerical

    @property
    def lengths(self) -> np.ndarray:
        """Number of events of each user, shape (n_users,)."""
        return np.diff(self.offsets)

    def categories(self, column: str) -> tuple[str, ...]:
        """The sorted vocabulary of a categorical column."""
        if column not in self.vocabularies:
            kind = "numerical" if column in self.values else "unknown"
            raise InputError(
                f"{column!r} is not a categorical column ({kind}); categorical columns are {self.categorical}")
        return self.vocabularies[column]

    def user_index(self, user_id: Any) -> int:
        """Position of a user id in :attr:`users`; ``KeyError`` naming the id if absent."""
        if self._user_position is None:
            self._user_position = {uid: i for i, uid in enumerate(self.users.tolist())}
        if isinstance(user_id, (bool, np.bool_)):  # True == 1 in a dict: it would find user 1
            raise UnknownUserError(f"user {user_id!r} is not in these sequences (a user id, not a truth value)")
        try:
            return self._user_position[user_id]
        except (KeyError, TypeError):
            raise UnknownUserError(f"user {user_id!r} is not in these sequences") from None

    def events(self, user_id: Any) -> pd.DataFrame:
        """One user's events in time order, with categories decoded."""
        i = self.user_index(user_id)
        return self._decode(slice(self.offsets[i], self.offsets[i + 1]))

    def to_frame(self) -> pd.DataFrame:
        """All events as a long table in (user, time) order."""
        return self._decode(slice(0, self.n_events))

    def _decode(self, rows: slice) -> pd.DataFrame:
        out: dict[str, Any] = {self.user_column: self.users[self.event_user[rows]]}
        if self.times is not None and self.time_column is not None:
            out[self.time_column] = self.times[rows]
        for name, codes in self.codes.items():
            vocab = np.array(self.vocabularies[name] + ("<unseen>",), dtype=object)
            out[name] = vocab[codes[rows]]
        for name, values in self.values.items():
            out[name] = values[rows]
        return pd.DataFrame(out)

    def subset(self, user_indices: np.ndarray) -> Sequences:
        """A new Sequences with only the given users (indices into :attr:`users`), in sorted order.

        Repeated indices count once and the users keep the order of :attr:`users`
        (``seqs[idx]`` keeps the order of ``idx`` instead). Vocabularies and the
        reference time are kept, so statistics and literals stay comparable.

        Parameters
        ----------
        user_indices : array-like of int
            Positions in :attr:`users`, each in ``[0, n_users)``.

        Returns
        -------
        Sequences
        """
        idx = np.unique(np.asarray(user_indices, dtype=np.int64))
        if len(idx) and (idx[0] < 0 or idx[-1] >= self.n_users):
            raise IndexOutOfRange(f"user indices must lie in [0, {self.n_users})")
        return self._take(idx)

    def _take(self, idx: np.ndarray) -> Sequences:
        """The users at positions ``idx`` (distinct, in range), in that order, sharing the vocabularies."""
        pos, seg = self.batch_positions(idx)
        new = object.__new__(Sequences)
        new.user_column, new.time_column = self.user_column, self.time_column
        new.users = self.users[idx]
        new.event_user = seg
        lengths = self.offsets[idx + 1] - self.offsets[idx]
        new.offsets = np.zeros(len(idx) + 1, dtype=np.int64)
        np.cumsum(lengths, out=new.offsets[1:])
        new.times = None if self.times is None else self.times[pos]
        # The parent's reference time, not the subset's latest event: values stay comparable.
        new.reference_time = self.reference_time
        new.input_row = self.input_row[pos]
        new.vocabularies = dict(self.vocabularies)
        new.codes = {k: v[pos] for k, v in self.codes.items()}
        new.values = {k: v[pos] for k, v in self.values.items()}
        new.units = dict(self.units)
        new._user_position = None
        new._cache = {}
        return new

    def __getitem__(self, key: Any) -> Sequences:
        """The users at some positions, in the order given: a new Sequences.

        Parameters
        ----------
        key : array-like of int, slice, or array-like of bool
            Positions in :attr:`users` (negative ones count from the end, as
            in numpy), a slice of them, or a boolean mask of length
            ``n_users``. ``seqs[idx, ...]`` is the same as ``seqs[idx]`` (what
            scikit-learn's indexing of arrays passes).

        Returns
        -------
        Sequences
            Those users in that order (``users`` is ``self.users[key]``), each
            with all its events; vocabularies, units and the reference time are
            kept, so statistics and literals stay comparable.

        Raises
        ------
        InputTypeError
            For a single position (``seqs[3]``): it would be ambiguous between
            a user and a collection of one; write ``seqs[[3]]`` for a Sequences
            of that user, or ``seqs.events(seqs.users[3])`` for its events. Also
            for user ids, floats or anything else that is not a position.
        IndexOutOfRange
            For a position outside ``[-n_users, n_users)``.
        InputError
            For a mask of another length, a position given twice (a Sequences
            holds each user once), or a selection of no user.

        Examples
        --------
        >>> seqs[[2, 0]].users.tolist() == [seqs.users[2], seqs.users[0]]  # doctest: +SKIP
        True
        >>> train, test = seqs[:800], seqs[800:]                            # doctest: +SKIP
        """
        if isinstance(key, tuple):
            if len(key) == 2 and key[1] is Ellipsis or len(key) == 1:
                key = key[0]
            else:
                raise InputTypeError(f"a Sequences is indexed by users only (one axis), got {key!r}")
        return self._take(self._positions(key))

    def _positions(self, key: Any) -> np.ndarray:
        """``key`` as distinct positions in range, in the order given."""
        n = self.n_users
        if isinstance(key, slice):
            idx = np.arange(n, dtype=np.int64)[key]
        elif isinstance(key, (numbers.Integral, np.integer)) and not isinstance(key, (bool, np.bool_)):
            raise InputTypeError(
                f"seqs[{key!r}] is ambiguous: write seqs[[{key!r}]] for a Sequences of that one user, or "
                f"seqs.events(seqs.users[{key!r}]) for its events")
        else:
            if isinstance(key, (str, bytes, Mapping)) or np.isscalar(key) or key is None:
                raise InputTypeError(
                    f"a Sequences is indexed by positions (integers, a slice or a boolean mask), got {key!r}; "
                    "for a user id, use seqs[[seqs.user_index(user_id)]] or seqs.events(user_id)")
            arr = np.asarray(key)
            if arr.ndim != 1:
                raise InputError(f"user positions must be one-dimensional, got shape {arr.shape}")
            if arr.dtype == bool:
                if len(arr) != n:
                    raise InputError(f"a boolean mask of users must have one entry per user ({n}), got {len(arr)}")
                idx = np.flatnonzero(arr)
            elif arr.size == 0 or np.issubdtype(arr.dtype, np.integer):
                idx = arr.astype(np.int64)
                if idx.size and (idx.min() < -n or idx.max() >= n):
                    bad = idx[(idx < -n) | (idx >= n)][0]
                    raise IndexOutOfRange(f"user position {int(bad)} is out of range for {n} users")
                idx = np.where(idx < 0, idx + n, idx)
            else:
                raise InputTypeError(f"user positions must be integers or booleans, got dtype {arr.dtype}")
        if idx.size == 0:
            raise InputError("the selection holds no user: a Sequences needs at least one")
        if len(np.unique(idx)) != len(idx):
            seen = pd.Index(idx)
            twice = self.users[seen[seen.duplicated()].unique().to_numpy()]
            raise InputError(f"the selection repeats users ({name_users(twice)}): a Sequences holds each user once")
        return idx

    @property
    def shape(self) -> tuple[int]:
        """``(n_users,)``: a one-dimensional collection of users (how scikit-learn counts samples)."""
        return (self.n_users,)

    def __iter__(self) -> Any:
        """Not iterable: a loop over users is what the columnar layout avoids (say which you mean)."""
        raise InputTypeError("a Sequences is not iterated user by user; loop over seqs.users (with "
                             "seqs.events(user)), or select users with seqs[positions]")

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        """Not an array: numpy and scikit-learn's array checks get a clear error, not a 0-d object array."""
        raise InputTypeError("a Sequences is not an array of numbers; turn it into one row per user first, "
                             "e.g. with rx.SequenceAggregator() in a scikit-learn pipeline")

    def batch_positions(self, user_indices: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Event positions of some users, and the batch index of each event.

        Returns ``(positions, segment)``: the events of ``user_indices[b]`` are
        the positions with ``segment == b``, in time order, one block per user.
        """
        idx = np.asarray(user_indices, dtype=np.int64)
        starts = self.offsets[idx]
        lengths = self.offsets[idx + 1] - starts
        total = int(lengths.sum())
        segment = np.repeat(np.arange(len(idx), dtype=np.int32), lengths)
        block_start = np.zeros(len(idx), dtype=np.int64)
        np.cumsum(lengths[:-1], out=block_start[1:])
        positions = np.arange(total, dtype=np.int64) + np.repeat(starts - block_start, lengths)
        return positions, segment

    def to_arrays(self) -> tuple[dict, dict[str, np.ndarray]]:
        """The layout as JSON-ready metadata and plain numpy arrays (no objects).

        :meth:`from_arrays` reads them back; saved explanations use this.
        """
        reference_time = None
        if self.reference_time is not None and self.times is not None:
            # Nanoseconds for datetime and timedelta columns, the number otherwise.
            reference_time = int(self.reference_time.view(np.int64)) if self.times.dtype.kind in "mM" \
                else float(self.reference_time)
        meta: dict[str, Any] = {
            "user_column": self.user_column,
            "time_column": self.time_column,
            "users": self.users.tolist(),
            "vocabularies": {k: list(v) for k, v in self.vocabularies.items()},
            "categorical": self.categorical,
            "numerical": self.numerical,
            "time_dtype": None if self.times is None else str(self.times.dtype),
            "reference_time": reference_time,
            "units": dict(self.units),
        }
        arrays: dict[str, np.ndarray] = {"offsets": self.offsets, "event_user": self.event_user,
                                         "input_row": self.input_row}
        if self.times is not None:
            arrays["times"] = self.times.view(np.int64) if self.times.dtype.kind in "mM" else self.times
        for i, name in enumerate(self.categorical):
            arrays[f"codes_{i}"] = self.codes[name]
        for i, name in enumerate(self.numerical):
            arrays[f"values_{i}"] = self.values[name]
        return meta, arrays

    @classmethod
    def from_arrays(cls, meta: dict, arrays: Mapping[str, np.ndarray]) -> Sequences:
        """Rebuild a layout written by :meth:`to_arrays`, checking its shape."""
        new = object.__new__(cls)
        try:
            new.user_column, new.time_column = meta["user_column"], meta["time_column"]
            text_ids = any(isinstance(u, str) for u in meta["users"])
            new.users = np.array(meta["users"], dtype=object if text_ids else None)
            new.offsets = np.asarray(arrays["offsets"], dtype=np.int64)
            new.event_user = np.asarray(arrays["event_user"], dtype=np.int32)
            new.input_row = np.asarray(arrays["input_row"], dtype=np.int64)
            times = arrays.get("times")
            dtype = meta.get("time_dtype")
            if times is not None and np.dtype(dtype).kind not in "mMf":
                raise InputError(f"time dtype {dtype!r} is not a datetime, timedelta or float")
            new.times = None if times is None else (
                times.view(np.dtype(dtype)) if np.dtype(dtype).kind in "mM" else np.asarray(times, dtype=np.float64))
            ref = meta.get("reference_time")
            if new.times is None:
                new.reference_time = None
            elif ref is None:  # saved before reference times existed: the latest event
                new.reference_time = new.times.max() if len(new.times) else None
            elif new.times.dtype.kind in "mM":
                new.reference_time = np.int64(ref).view(new.times.dtype)
            else:
                new.reference_time = float(ref)
            new.vocabularies = {k: tuple(v) for k, v in meta["vocabularies"].items()}
            new.codes = {name: np.asarray(arrays[f"codes_{i}"], dtype=np.int32)
                         for i, name in enumerate(meta["categorical"])}
            new.values = {name: np.asarray(arrays[f"values_{i}"], dtype=np.float64)
                          for i, name in enumerate(meta["numerical"])}
            new.units = _check_units(meta.get("units"), meta["numerical"])
        except (KeyError, TypeError, ValueError, OverflowError) as err:
            raise InputError(f"the saved sequences are incomplete or damaged: {err!r}") from None
        n_events = len(new.event_user)
        if len(new.offsets) != len(new.users) + 1 or new.offsets[-1] != n_events or \
                any(len(a) != n_events for a in [*new.codes.values(), *new.values.values(), new.input_row]) or \
                (new.times is not None and len(new.times) != n_events):
            raise InputError("the saved sequences are inconsistent: array lengths do not match")
        cls._check_saved_contents(new)
        new._user_position = None
        new._cache = {}
        return new

    @staticmethod
    def _check_saved_contents(new: Sequences) -> None:
        """Refuse saved layouts that would show wrong events or fail later, naming the array."""
        users = new.users
        if new.offsets[0] != 0 or (np.diff(new.offsets) < 0).any():
            i = int(np.flatnonzero(np.diff(new.offsets) < 0)[0]) if (np.diff(new.offsets) < 0).any() else 0
            raise InputError(f"the saved offsets decrease (at user {_plain(users[i])!r}): events cannot be placed")
        if len(pd.unique(users)) != len(users):
            dup = pd.Index(users)[pd.Index(users).duplicated()]
            raise InputError(f"the saved users repeat the ids {[_plain(u) for u in dup[:5]]}")
        expected_user = np.repeat(np.arange(len(users), dtype=np.int32), np.diff(new.offsets))
        if not np.array_equal(new.event_user, expected_user):
            raise InputError("the saved user of each event (event_user) disagrees with the offsets")
        n_events = len(new.event_user)
        if n_events and (new.input_row.min() < 0 or new.input_row.max() >= n_events):
            raise InputError(f"the saved input rows fall outside [0, {n_events})")
        if set(new.vocabularies) != set(new.codes):
            raise InputError("the saved vocabularies do not match the categorical columns")
        for name, codes in new.codes.items():
            size = len(new.vocabularies[name])
            bad = (codes < UNSEEN_CODE) | (codes >= size)
            if bad.any():
                raise InputError(f"the saved codes of column {name!r} hold {int(codes[bad][0])}, outside its "
                                 f"{size} categories")
        if len(set(new.codes) | set(new.values)) != len(new.codes) + len(new.values):
            raise InputError("a saved column is both categorical and numerical")

    @property
    def nbytes(self) -> int:
        """Bytes held by the columnar layout."""
        arrays: list[np.ndarray] = [self.event_user, self.offsets, *self.codes.values(), *self.values.values()]
        if self.times is not None:
            arrays.append(self.times)
        arrays.append(self.input_row)
        return int(sum(a.nbytes for a in arrays))

    def __len__(self) -> int:
        """Number of users (``n_users``)."""
        return self.n_users

    def __repr__(self) -> str:
        return (
            f"Sequences({self.n_users:,} users, {self.n_events:,} events; "
            f"categorical={self.categorical}, numerical={self.numerical})"
        )
