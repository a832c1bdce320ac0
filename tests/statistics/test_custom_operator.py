"""Adding operators of one's own: a row operator and an aggregation.

This is the documented way (see rudi_explain/statistics/operators.py): state
the kind, the validity, the vectorized evaluation, then register.
"""

from dataclasses import dataclass
from typing import ClassVar

import numpy as np
import pandas as pd
import pytest

import rudi_explain as rx
from rudi_explain.statistics import (
    OPERATORS,
    Aggregation,
    Pipeline,
    RowOperator,
    Schema,
    next_operators,
    register_operator,
)


@dataclass(frozen=True)
class Last(RowOperator):
    """Keep the last k events of each user in the current order."""

    k: int = 3
    name: ClassVar[str] = "Last"

    def arguments(self):
        return [str(self.k)]

    @classmethod
    def from_arguments(cls, positional, keyword):
        return cls(int(positional[0]))

    def check(self, state, schema):
        return super().check(state, schema)  # anywhere a row operator may stand

    @classmethod
    def candidates(cls, schema):
        yield cls(3)

    def apply(self, frame):
        rank = frame.rank_in_segment()
        size = np.bincount(frame.segment, minlength=frame.n_segments)[frame.segment]
        return frame.keep(rank >= size - self.k)


@dataclass(frozen=True)
class Distinct(Aggregation):
    """Number of distinct defined values."""

    name: ClassVar[str] = "Distinct"
    words: ClassVar[str] = "number of distinct values"
    sorted_input: ClassVar[bool] = True  # the engine hands values sorted within each user

    def reduce(self, values, keys, n_keys):
        ok = ~np.isnan(values)
        v, k = values[ok], keys[ok]
        new = np.r_[True, (k[1:] != k[:-1]) | (v[1:] != v[:-1])] if len(v) else np.zeros(0, bool)
        return np.bincount(k[new], minlength=n_keys).astype(float)


@pytest.fixture(autouse=True, scope="module")
def registered():
    register_operator(Last)
    register_operator(Distinct)
    yield
    OPERATORS.pop("Last")
    OPERATORS.pop("Distinct")


def test_custom_operators_parse_evaluate_and_join_the_search_space():
    df = pd.DataFrame({"user_id": [1, 1, 1, 1, 2, 2], "ts": [1, 2, 3, 4, 1, 2],
                       "kind": ["a", "b", "a", "a", "b", "b"], "x": [5.0, 5.0, 1.0, np.nan, 2.0, 3.0]})
    seqs = rx.Sequences(df)
    stat = rx.Statistic.parse("Select(x) | Last(3) | Distinct")
    assert str(stat) == "Select(x) | Last(3) | Distinct"
    # user 1, last 3 events: 5, 1, nan -> 2 distinct; user 2: 2, 3 -> 2
    np.testing.assert_array_equal(stat.evaluate(seqs), [2.0, 2.0])
    np.testing.assert_array_equal(rx.Statistic.parse("Select(x) | Distinct").evaluate(seqs), [2.0, 2.0])
    np.testing.assert_array_equal(rx.Statistic.parse("Select(x) | Last(1) | Sum").evaluate(seqs), [0.0, 3.0])
    # On a categorical selection the generic one-hot fallback applies.
    np.testing.assert_array_equal(rx.Statistic.parse("Select(kind) | Distinct").evaluate(seqs), [[2, 2], [1, 1]])
    schema = Schema.of(seqs)
    after_select = Pipeline((rx.statistics.Select("x"),), schema=schema)
    names = {op.name for op in next_operators(after_select, schema, max_depth=3)}
    assert {"Last", "Distinct"} <= names


def test_register_rejects_bad_operators():
    with pytest.raises(TypeError):
        register_operator(int)

    @dataclass(frozen=True)
    class Mean2(Aggregation):
        name: ClassVar[str] = "Mean"

    with pytest.raises(ValueError, match="already registered"):
        register_operator(Mean2)
