"""The explanation is read-only: a frozen result, derived explanations that share no job state, one set of defaults."""

from __future__ import annotations

import dataclasses
import inspect

import numpy as np
import pytest
from sklearn.exceptions import NotFittedError
from sklearn.utils.validation import check_is_fitted
from tiny import tiny_payments

import rudi_explain as rx
from rudi_explain.explanation import DEFAULTS, ExplainConfig, FittedState


@pytest.fixture(scope="module")
def exp():
    return tiny_payments(150)


def test_the_result_is_frozen_and_its_arrays_read_only(exp):
    state = exp.result
    assert isinstance(state, FittedState)
    with pytest.raises(dataclasses.FrozenInstanceError):
        state.rules = None
    for array in (state.values, state.literal_matrix, state.fires, state.is_test, exp.is_test):
        assert not array.flags.writeable
        with pytest.raises(ValueError, match="read-only"):
            array[0] = array[0]
    with pytest.raises(ValueError, match="read-only"):
        exp.student_scores.iloc[0] = 1.0
    with pytest.raises(AttributeError):
        exp.rules = None  # a property without a setter: nothing outside the result to patch


def test_with_rules_and_with_threshold_share_no_job_state(exp):
    listened = []
    exp.on_progress(listened.append)
    for other in (exp.with_threshold(0, float(exp.literals.thresholds[0]) + 1.0), exp.with_result(exp.result)):
        assert other is not exp
        assert other._job is not exp._job and other._job._cancel is not exp._job._cancel
        assert other._listeners is not exp._listeners and other._listeners == []
        assert other.history == exp.history and other._job.history is not exp._job.history
        assert other.done and other.status == "done"
    moved = exp.with_threshold(0, float(exp.literals.thresholds[0]) + 1.0)
    assert exp.params.get("moved_thresholds") is None and len(moved.params["moved_thresholds"]) == 1
    assert moved.result.moved_thresholds[0]["literal"] == 0


def test_a_result_replaced_keeps_the_arrays_read_only(exp):
    state = exp.result
    again = dataclasses.replace(state, literal_matrix=np.array(state.literal_matrix))
    assert not again.literal_matrix.flags.writeable


def test_one_set_of_defaults():
    signature = inspect.signature(rx.explain)
    fields = {f.name for f in dataclasses.fields(ExplainConfig)}
    checked = 0
    for name, parameter in signature.parameters.items():
        if name in ("model", "data"):
            assert parameter.kind is inspect.Parameter.POSITIONAL_OR_KEYWORD
            continue
        assert parameter.kind is inspect.Parameter.KEYWORD_ONLY, name
        if name in fields and parameter.default is not None:
            assert parameter.default == getattr(DEFAULTS, name), name
            checked += 1
    assert checked >= 15


@pytest.mark.parametrize("kwargs, error, message", [
    (dict(n_stats=0), ValueError, "n_stats must be a whole number >= 1"),
    (dict(n_rules=2.5), TypeError, "n_rules must be a whole number"),
    (dict(test_size=1.0), ValueError, "test_size"),
    (dict(random_state=-1), ValueError, "random_state"),
    (dict(grammar="plain"), ValueError, "grammar must be one of"),
    (dict(student="forest"), ValueError, "student must be one of"),
    (dict(background="later"), ValueError, "background must be one of"),
    (dict(search_params=3), TypeError, "search_params must be a dict"),
])
def test_the_config_checks_its_fields(kwargs, error, message):
    with pytest.raises(error, match=message):
        ExplainConfig(**kwargs)


def test_an_estimator_student_is_cloned_never_fitted():
    demo = rx.datasets.make_payments(300, random_state=2)
    mine = rx.LassoLiterals(n_rules=5)
    exp = rx.explain(None, demo.events, scores=demo.risk, student=mine, background=False, n_stats=2,
                     n_simulations=10)
    assert exp.student is not mine and isinstance(exp.student, rx.LassoLiterals)
    check_is_fitted(exp.student)
    with pytest.raises(NotFittedError):
        check_is_fitted(mine)  # the caller's object is left as it was
    assert exp.report()["student"] == "LassoLiterals"
