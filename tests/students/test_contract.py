"""One contract for every rule student: scikit-learn's estimator manners and the same fit / rules / predict face.

Every student (GS-NLN, the sum of trees, the Bayesian rule list, the HKL rule ensemble and the
paper's baselines) is swept by the same tests: keyword-only hyper-parameters that ``clone``,
``get_params`` and ``set_params`` round-trip; ``fit`` returns ``self`` and learns attributes
ending in ``_``; ``rules(literals)`` scores exactly as ``predict``; scikit-learn's
``NotFittedError`` before ``fit``; the same seed gives the same rules. Then scikit-learn's own
``check_estimator`` checks: those that feed real-valued ``X`` cannot apply to a student that
takes a binary literal matrix, and are marked as expected failures with that reason (the
properties they test are checked on literal matrices in :func:`test_literal_matrix_manners`).
"""

import inspect
import pickle

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.exceptions import NotFittedError as SklearnNotFittedError
from sklearn.utils.estimator_checks import estimator_checks_generator
from sklearn.utils.validation import check_is_fitted

import rudi_explain as rx
from rudi_explain.exceptions import NotFittedError as RudiNotFittedError
from rudi_explain.rules.ruleset import RuleSet
from rudi_explain.students import FitProgress, NotFittedError

#: every student, with settings that keep each fit well under a second
SMALL = {
    rx.GSNLN: dict(n_rules=6, hidden_size=4, epochs=30),
    rx.SumOfTrees: dict(n_rules=6),
    rx.BayesianRuleList: dict(n_iterations=400, n_chains=2),
    rx.HKLRuleEnsemble: dict(n_rules=6, max_samples=200),
    rx.CARTRules: dict(n_rules=6),
    rx.LassoLiterals: dict(n_rules=6),
    rx.LassoStatistics: dict(n_rules=6),
}
STUDENTS = list(SMALL)


def make_student(cls, **params):
    return cls(**{**SMALL[cls], **params})


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


def test_every_student_is_swept():
    assert set(STUDENTS) == {getattr(rx.students, name) for name in rx.students.__all__
                             if isinstance(getattr(rx.students, name), type)
                             and issubclass(getattr(rx.students, name), rx.students.RuleStudent)
                             and getattr(rx.students, name) is not rx.students.RuleStudent}


def test_not_fitted_error_is_scikit_learns():
    assert NotFittedError is RudiNotFittedError
    assert issubclass(NotFittedError, SklearnNotFittedError)
    assert issubclass(NotFittedError, rx.RudiExplainError)


@pytest.mark.parametrize("cls", STUDENTS, ids=lambda c: c.__name__)
def test_hyper_parameters(cls):
    signature = inspect.signature(cls.__init__)
    names = [p for p in signature.parameters if p != "self"]
    # keyword-only, each with a default
    assert all(signature.parameters[p].kind is inspect.Parameter.KEYWORD_ONLY for p in names)
    assert all(signature.parameters[p].default is not inspect.Parameter.empty for p in names)
    with pytest.raises(TypeError):
        cls(6)
    student = make_student(cls)
    # __init__ stores hyper-parameters unchanged and nothing else
    params = student.get_params(deep=True)
    assert set(params) == set(names)
    assert params == student.get_params(deep=False)
    assert all(getattr(student, p) is params[p] for p in names)
    assert not [k for k in vars(student) if k.endswith("_")]
    # the repr names every hyper-parameter, defaults included
    assert repr(student) == f"{cls.__name__}({', '.join(f'{k}={v!r}' for k, v in params.items())})"
    # clone: the same parameters, a new unfitted object
    twin = clone(student)
    assert twin is not student and type(twin) is cls
    assert twin.get_params() == params
    # set_params: returns the student, changes only what it names
    other = "n_iterations" if cls is rx.BayesianRuleList else "n_rules"
    assert twin.set_params(**{other: 3}) is twin
    assert twin.get_params() == {**params, other: 3}
    assert student.get_params() == params
    with pytest.raises(ValueError, match="Invalid parameter"):
        twin.set_params(no_such_parameter=1)


@pytest.mark.parametrize("cls", STUDENTS, ids=lambda c: c.__name__)
def test_contract(cls, problem):
    V, lits, y = problem
    student = make_student(cls)
    params = student.get_params()
    X = inputs(cls, V, lits)
    # before fit: scikit-learn's NotFittedError, from rules, predict and check_is_fitted
    for use in (lambda: student.rules(lits), lambda: student.predict(X), lambda: check_is_fitted(student)):
        with pytest.raises(SklearnNotFittedError):
            use()
    events = []
    assert student.fit(X, y, progress=events.append) is student
    check_is_fitted(student)
    assert student.n_features_in_ == X.shape[1]
    assert events and all(isinstance(e, FitProgress) for e in events)
    assert 0.0 <= events[-1].fidelity <= 1.0
    assert student.get_params() == params  # fit does not touch hyper-parameters
    rules = student.rules(lits)
    assert isinstance(rules, RuleSet)
    assert 1 <= len(rules) <= (10 if cls is rx.BayesianRuleList else 6)  # a rule list's length comes from its prior
    # the student scores through its rules, numpy only
    np.testing.assert_allclose(student.predict(X), rules.score(X), rtol=1e-10, atol=1e-10)
    assert rx.metrics.fidelity(y, rules.score(X)) > 0.6
    # rules survive JSON and score the same afterwards
    back = type(rules).from_json(rules.to_json())  # a RuleList stays one
    np.testing.assert_array_equal(back.score(X), rules.score(X))
    assert str(back) == str(rules)
    # a clone of the fitted student is unfitted, with the same parameters; fitted, the same rules
    again = clone(student)
    with pytest.raises(SklearnNotFittedError):
        again.rules(lits)
    assert str(again.fit(X, y).rules(lits)) == str(rules)
    np.testing.assert_array_equal(again.predict(X), student.predict(X))


@pytest.mark.parametrize("cls", STUDENTS, ids=lambda c: c.__name__)
def test_literal_matrix_manners(cls, problem):
    """What scikit-learn's checks test on real-valued X, on the input the students take."""
    V, lits, y = problem
    X = inputs(cls, V, lits)
    student = make_student(cls).fit(X, y)
    expected = student.predict(X)
    # predicting changes no attribute (check_dict_unchanged)
    before = dict(vars(student))
    student.predict(X)
    after = vars(student)
    assert after.keys() == before.keys() and all(after[k] is before[k] for k in before)
    # rows are scored one by one: order and subsets do not matter (check_methods_*_invariance)
    order = np.random.default_rng(1).permutation(len(X))
    np.testing.assert_array_equal(student.predict(X[order]), expected[order])
    np.testing.assert_array_equal(student.predict(X[:37]), expected[:37])
    # a pickled student predicts the same (check_estimators_pickle)
    np.testing.assert_array_equal(pickle.loads(pickle.dumps(student)).predict(X), expected)
    # fitting again on the same data gives the same model (check_fit_idempotent)
    np.testing.assert_array_equal(student.fit(X, y).predict(X), expected)
    # dtypes and layouts: bool, 0/1 integers and floats, Fortran order, read-only
    # (check_estimators_dtypes, check_f_contiguous_array_estimator, check_readonly_memmap_input)
    variants = [np.asfortranarray(X), X.copy()]
    if cls.input_kind == "literals":
        variants += [X.astype(np.int64), X.astype(np.float32), X.astype(np.float64)]
    variants[-1].setflags(write=False)
    for Xv in variants:
        np.testing.assert_allclose(student.predict(Xv), expected, rtol=1e-6, atol=1e-6)
    for Xv in (variants[0], variants[-1]):  # fitted on Fortran order, and on read-only 0/1 floats
        np.testing.assert_allclose(clone(student).fit(Xv, y).predict(Xv), expected, rtol=1e-6, atol=1e-6)
    # one column too many or too few: a ValueError (check_n_features_in_after_fitting)
    for width in (X.shape[1] - 1, X.shape[1] + 1):
        with pytest.raises(ValueError):
            student.predict(np.zeros((3, width), dtype=X.dtype))
    # sparse input is refused with words that say so
    from scipy import sparse

    with pytest.raises(TypeError, match="sparse input is not supported"):
        clone(student).fit(sparse.csr_matrix(X.astype(np.float64)), y)


@pytest.mark.parametrize("cls", STUDENTS, ids=lambda c: c.__name__)
def test_contract_rejects_a_constant_teacher(cls, problem):
    V, lits, _ = problem
    with pytest.raises(ValueError, match="constant"):
        make_student(cls).fit(inputs(cls, V, lits), np.ones(len(V)))


@pytest.mark.parametrize("cls", STUDENTS, ids=lambda c: c.__name__)
def test_bad_hyper_parameters_fail_in_fit_not_init(cls, problem):
    V, lits, y = problem
    name = "n_iterations" if cls is rx.BayesianRuleList else "n_rules"
    student = make_student(cls, **{name: 0})  # stored as given
    assert student.get_params()[name] == 0
    with pytest.raises(ValueError, match=name):
        student.fit(inputs(cls, V, lits), y)
    with pytest.raises(TypeError, match=name):
        make_student(cls, **{name: 2.5}).fit(inputs(cls, V, lits), y)


# ---------------------------------------------------------------------------
# scikit-learn's check_estimator


#: Checks that fit on real-valued X (random normal or uniform data, negative values, NaN, or
#: one-column and one-row matrices of floats). A literal student refuses any X that is not
#: 0/1 with an InputError, as it must (it reads each column as "the literal holds"); each
#: property these checks test is checked on literal matrices by the test named.
_REAL_VALUED_X = {
    "check_fit_score_takes_y": "test_contract (fit returns self)",
    "check_estimators_overwrite_params": "test_contract (parameters unchanged by fit)",
    "check_dont_overwrite_parameters": "test_hyper_parameters (no attribute set in __init__)",
    "check_estimators_fit_returns_self": "test_contract",
    "check_readonly_memmap_input": "test_literal_matrix_manners (read-only input)",
    "check_n_features_in_after_fitting": "test_literal_matrix_manners (wrong width)",
    "check_positive_only_tag_during_fit": None,
    "check_estimators_dtypes": "test_literal_matrix_manners (dtypes)",
    "check_dtype_object": None,
    "check_pipeline_consistency": "test_contract (same seed, same rules)",
    "check_estimators_nan_inf": "test_bad_input_is_rejected in test_gsnln.py (NaN is not a literal value)",
    "check_estimators_pickle": "test_literal_matrix_manners (pickle)",
    "check_f_contiguous_array_estimator": "test_literal_matrix_manners (Fortran order)",
    "check_regressors_train": "test_contract (fidelity of the rules)",
    "check_regressor_data_not_an_array": None,
    "check_regressors_no_decision_function": None,
    "check_supervised_y_2d": None,
    "check_regressors_int": None,
    "check_methods_sample_order_invariance": "test_literal_matrix_manners (row order)",
    "check_methods_subset_invariance": "test_literal_matrix_manners (subsets)",
    "check_fit2d_1sample": None,
    "check_fit2d_1feature": None,
    "check_dict_unchanged": "test_literal_matrix_manners (predict changes no attribute)",
    "check_fit_idempotent": "test_literal_matrix_manners (fit twice)",
    "check_fit_check_is_fitted": "test_contract (check_is_fitted before and after fit)",
    "check_n_features_in": "test_contract (n_features_in_)",
    "check_fit2d_predict1d": None,
    "check_requires_y_none": None,
}


def expected_failed_checks(student):
    """Why each expected failure cannot apply to this student."""
    if student.input_kind == "values":
        return {"check_dtype_object": "the value matrix must be numeric: an object array is refused "
                                      "(statistic values are floats, NaN where undefined)"}
    name = type(student).__name__
    out = {}
    for check, covered in _REAL_VALUED_X.items():
        reason = (f"{name} takes a binary literal matrix (bool or 0/1, literals.transform(seqs)) and refuses "
                  "the real-valued X this check fits on")
        out[check] = reason + (f"; checked on literal matrices by {covered}" if covered else "")
    return out


def _sklearn_checks():
    """(student, check, reason it cannot apply or None), one per check scikit-learn yields."""
    for cls in STUDENTS:
        student = make_student(cls, **({"epochs": 3} if cls is rx.GSNLN else {}))
        expected = expected_failed_checks(student)
        for estimator, check in estimator_checks_generator(student, legacy=True):
            name = getattr(check, "func", check).__name__
            keywords = ",".join(f"{k}={v}" for k, v in getattr(check, "keywords", {}).items())
            yield pytest.param(estimator, check, expected.get(name),
                               id=f"{cls.__name__}-{name}" + (f"({keywords})" if keywords else ""))


@pytest.mark.parametrize("estimator, check, cannot_apply", list(_sklearn_checks()))
def test_scikit_learn_checks(estimator, check, cannot_apply):
    """scikit-learn's check_estimator, check by check; those that cannot apply must still fail.

    An expected failure is turned into an xfail here, from the test itself, rather than with
    ``parametrize_with_checks``' marks: pytest then does not format the check's deep traceback
    (for some 200 expected failures that took minutes), and a check that starts passing is a
    failure that asks to take it off the list (strict).
    """
    if cannot_apply is None:
        check(estimator)
        return
    try:
        check(estimator)
    except Exception as err:  # any failure of a check that cannot apply
        failure = type(err).__name__
    else:
        pytest.fail(f"this check now passes: take it off the expected failures ({cannot_apply})")
    pytest.xfail(f"{cannot_apply} ({failure})")  # outside the except: no chained traceback to format
