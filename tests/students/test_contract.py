"""One contract for every rule student: the same fit / rules / predict face."""

import inspect

import numpy as np
import pytest

import rudi_explain as rx
from rudi_explain.rules.ruleset import RuleSet
from rudi_explain.students import FitProgress, NotFittedError


def make_student(cls):
    return cls(epochs=30, n_rules=6, hidden_size=4) if cls is rx.GSNLN else cls(n_rules=6)


STUDENTS = [rx.GSNLN, rx.LassoLiterals, rx.CARTRules, rx.LassoStatistics, rx.SumOfTrees]


@pytest.fixture(scope="module")
def problem():
    rng = np.random.default_rng(0)
    V = rng.normal(size=(400, 5))
    V[rng.random(V.shape) < 0.05] = np.nan
    lits = rx.Literals.from_values(V, names=list("abcde"))
    y = np.nan_to_num(V[:, 0]) + (np.nan_to_num(V[:, 1]) > 0) + 0.1 * rng.normal(size=400)
    return V, lits, y


def inputs(cls, V, lits):
    return V if cls.input_kind == "values" else lits.transform_values(V)


@pytest.mark.parametrize("cls", STUDENTS)
def test_contract(cls, problem):
    V, lits, y = problem
    student = make_student(cls)
    # __init__ stores hyper-parameters and nothing else
    params = student.get_params()
    assert set(params) == set(inspect.signature(cls.__init__).parameters) - {"self"}
    assert not [k for k in vars(student) if k.endswith("_")]
    with pytest.raises(NotFittedError):
        student.rules(lits)
    X = inputs(cls, V, lits)
    events = []
    assert student.fit(X, y, progress=events.append) is student
    assert events and all(isinstance(e, FitProgress) for e in events)
    assert 0.0 <= events[-1].fidelity <= 1.0
    assert student.get_params() == params  # fit does not touch hyper-parameters
    rules = student.rules(lits)
    assert isinstance(rules, RuleSet)
    assert 1 <= len(rules) <= 6
    # the student scores through its rules, numpy only
    np.testing.assert_allclose(student.predict(X), rules.score(X), rtol=1e-10, atol=1e-10)
    assert rx.metrics.fidelity(y, rules.score(X)) > 0.6
    # rules survive JSON and score the same afterwards
    back = RuleSet.from_json(rules.to_json())
    np.testing.assert_array_equal(back.score(X), rules.score(X))
    assert str(back) == str(rules)
    # same data and random_state: the same rules
    again = make_student(cls).fit(X, y)
    assert str(again.rules(lits)) == str(rules)


@pytest.mark.parametrize("cls", STUDENTS)
def test_contract_rejects_a_constant_teacher(cls, problem):
    V, lits, _ = problem
    with pytest.raises(ValueError, match="constant"):
        make_student(cls).fit(inputs(cls, V, lits), np.ones(len(V)))
