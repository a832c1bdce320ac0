import numpy as np
import pytest
import torch

import rudi_explain as rx
from rudi_explain.metrics import fidelity
from rudi_explain.rules.formula import evaluate_formula, formula_literals
from rudi_explain.students import GSNLN, FitProgress, NotFittedError
from rudi_explain.students.gsnln import _loss_and_grads


@pytest.fixture(scope="module")
def planted_and():
    """Teacher = x0 AND x1 (plus tiny noise), among 12 random literals."""
    rng = np.random.default_rng(0)
    X = rng.random((2000, 12)) < 0.5
    truth = X[:, 0] & X[:, 1]
    y = truth + 0.01 * rng.normal(size=2000)
    return X, y, truth


@pytest.fixture(scope="module")
def fitted_and(planted_and):
    X, y, _ = planted_and
    return GSNLN(n_rules=20, hidden_size=20, epochs=40, batch_size=128, random_state=0).fit(X, y)


def test_recovers_a_planted_and(planted_and, fitted_and):
    X, y, truth = planted_and
    rules = fitted_and.rules()
    top = rules[0]
    assert {lit.index for lit in formula_literals(top.formula)} == {0, 1}
    fires = top.fires(X)
    # the AND itself, or its complement with the opposite sign
    if top.weight > 0:
        np.testing.assert_array_equal(fires, truth)
    else:
        np.testing.assert_array_equal(fires, ~truth)
    # and orders users about as well as the truth does: test_recovery_over_seeds, a rate over seeds


@pytest.mark.slow
def test_recovery_over_seeds(planted_and, fitted_and):
    # The planted AND recovered, ordering users about as well as the truth, as a rate over four
    # training seeds, not one seed's luck. When written: recovered at seeds 0-3, fidelity 0.694,
    # 0.688, 0.686, 0.690 against the truth's 0.682.
    X, y, truth = planted_and
    hits = 0
    for seed in range(4):
        student = fitted_and if seed == 0 else GSNLN(n_rules=20, hidden_size=20, epochs=40, batch_size=128,
                                                     random_state=seed).fit(X, y)
        rules = student.rules()
        top = rules[0]
        fires = top.fires(X)
        found = ({lit.index for lit in formula_literals(top.formula)} == {0, 1}
                 and np.array_equal(fires, truth if top.weight > 0 else ~truth))
        hits += found and fidelity(y, rules.score(X)) >= fidelity(y, truth.astype(float)) - 0.01
    assert hits >= 3, hits


def test_rule_scores_equal_the_networks_hard_output(planted_and, fitted_and):
    X, _, _ = planted_and
    rng = np.random.default_rng(5)
    X_new = rng.random((500, 12)) < 0.3  # any binary input, not only the training rows
    for Xs in (X, X_new):
        hard = fitted_and.decision_function(Xs)
        np.testing.assert_allclose(fitted_and.rules().score(Xs), hard, rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(fitted_and.predict(Xs), hard, rtol=1e-5, atol=1e-5)
    # and formula by formula: each rule unit of the network is its formula
    units = fitted_and._rule_units(X_new)
    for k, f in enumerate(fitted_and.formulas()):
        np.testing.assert_array_equal(units[:, k] == 1, evaluate_formula(f, X_new))


def test_hard_output_with_literal_merges():
    # on real literals the simplifier merges thresholds of one statistic;
    # scores must still equal the network's on every user
    data = rx.datasets.make_payments(600, random_state=3)
    seqs = data.sequences()
    lits = rx.Literals.fit(seqs, data.planted)
    X = lits.transform(seqs)
    student = GSNLN(epochs=15, random_state=1).fit(X, data.risk.to_numpy())
    rules = student.rules(lits)
    np.testing.assert_allclose(rules.score(seqs), student.decision_function(X), rtol=1e-5, atol=1e-5)
    assert rules.max_literals <= 4  # two layers: at most 2 ** 2 literals a rule
    assert all(r.n_literals == len(r.literals) for r in rules)
    # the rule text comes from the literal names
    assert any(name in str(rules) for name in ("sum of amount", "share of events"))


@pytest.mark.parametrize("n_layers, n_rules", [(1, 5), (3, 6)])
def test_rule_size_is_bounded_by_depth(planted_and, n_layers, n_rules):
    X, y, _ = planted_and
    student = GSNLN(n_rules=n_rules, hidden_size=3, n_layers=n_layers, epochs=3).fit(X[:500], y[:500])
    assert len(student.formulas()) == n_rules
    assert student.n_conjunctions_[-1] == (n_rules + 1) // 2
    assert all(len(formula_literals(f)) <= 2**n_layers for f in student.formulas())
    np.testing.assert_allclose(student.rules().score(X), student.decision_function(X), rtol=1e-5, atol=1e-5)


def reference_loss(z, y, logits, w, noise, tau, layers):
    """Straight-through Gumbel-softmax network and ranking loss, with autograd."""
    Ws = [W.clone().requires_grad_() for W in logits]
    wr = w.clone().requires_grad_()
    h = z
    for W, g, (n_in, nc, _, skip) in zip(Ws, noise, layers):
        soft = torch.softmax((W + g) / tau, dim=-1)
        hard = torch.nn.functional.one_hot((W + g).argmax(-1), n_in).to(soft.dtype)
        q = hard - soft.detach() + soft
        p = h @ q.T
        a, b = p[:, 0::2], p[:, 1::2]
        conj = a[:, :nc] * b[:, :nc]
        disj = 1 - (1 - a[:, nc:]) * (1 - b[:, nc:])
        h = torch.cat((conj, disj, h) if skip else (conj, disj), dim=1)
    s = h @ wr
    m = len(s)
    terms = []
    for i in range(m):
        for j in range(m):
            if i != j:
                d = s[i] - s[j] if y[i] > y[j] else s[j] - s[i]
                terms.append(-torch.nn.functional.logsigmoid(d))
    loss = torch.stack(terms).sum() / (m * (m - 1))
    loss.backward()
    return loss, [W.grad for W in Ws] + [wr.grad], s


def test_hand_written_gradients_match_autograd():
    gen = torch.Generator().manual_seed(0)
    student = GSNLN(n_rules=4, hidden_size=3, n_layers=3)
    layers = student._layer_sizes(5)
    m = 9
    X = (torch.rand(m, 5, generator=gen) < 0.5).float()
    z = torch.cat((X, 1 - X, torch.ones(m, 1), torch.zeros(m, 1)), dim=1)
    y = torch.randint(0, 3, (m,), generator=gen).float()  # with ties
    logits = [torch.randn(2 * (nc + nd), n_in, generator=gen) for n_in, nc, nd, _ in layers]
    w = torch.randn(4, generator=gen)
    noise = [-torch.log(-torch.log(torch.rand(W.shape, generator=gen))) for W in logits]
    grads = [torch.zeros_like(W) for W in logits] + [torch.zeros_like(w)]
    loss, s = _loss_and_grads(torch, z, y, logits, w, [g / 0.7 for g in noise], 0.7, layers, grads)
    ref_loss, ref_grads, ref_s = reference_loss(z, y, logits, w, noise, 0.7, layers)
    torch.testing.assert_close(s, ref_s.detach())
    torch.testing.assert_close(loss, ref_loss.detach())
    for g, r in zip(grads, ref_grads):
        torch.testing.assert_close(g, r, rtol=1e-4, atol=1e-6)
    assert any(g.abs().sum() > 0 for g in grads[:-1])  # the picks do get gradient


def test_deterministic_under_random_state(planted_and):
    X, y, _ = planted_and
    a = GSNLN(n_rules=4, hidden_size=4, epochs=5, random_state=7).fit(X, y)
    b = GSNLN(n_rules=4, hidden_size=4, epochs=5, random_state=7).fit(X, y)
    c = GSNLN(n_rules=4, hidden_size=4, epochs=5, random_state=8).fit(X, y)
    for wa, wb in zip(a.logits_, b.logits_):
        np.testing.assert_array_equal(wa, wb)
    np.testing.assert_array_equal(a.weights_, b.weights_)
    assert str(a.rules()) == str(b.rules())
    assert not all(np.array_equal(wa, wc) for wa, wc in zip(a.logits_, c.logits_))
    # the global random state is neither used nor changed
    torch.manual_seed(123)
    before = torch.rand(3)
    torch.manual_seed(123)
    GSNLN(n_rules=4, hidden_size=4, epochs=1).fit(X, y)
    np.testing.assert_array_equal(torch.rand(3), before)


def test_calibration_keeps_order_and_matches_scale(planted_and):
    X, y, _ = planted_and
    raw = GSNLN(n_rules=4, hidden_size=4, epochs=10, calibrate=False).fit(X, y)
    cal = GSNLN(n_rules=4, hidden_size=4, epochs=10, calibrate=True).fit(X, y)
    assert raw.intercept_ == 0.0
    assert fidelity(y, raw.predict(X)) == pytest.approx(fidelity(y, cal.predict(X)))
    assert cal.predict(X).mean() == pytest.approx(y.mean(), abs=1e-9)  # least squares


def test_progress_callback_and_cancel(planted_and):
    X, y, _ = planted_and
    seen = []

    def stop_after_three(p):
        seen.append(p)
        return p.epoch < 3

    student = GSNLN(n_rules=4, hidden_size=4, epochs=50).fit(X, y, progress=stop_after_three)
    assert student.n_epochs_run_ == 3 and len(student.loss_curve_) == 3
    assert [p.epoch for p in seen] == [1, 2, 3]
    assert all(isinstance(p, FitProgress) and p.epochs == 50 for p in seen)
    assert all(0.0 <= p.fidelity <= 1.0 and p.loss > 0 for p in seen)
    assert seen[0].temperature == 1.0 and seen[1].temperature < 1.0
    assert seen[0].learning_rate == 0.1
    student.rules()  # usable after a cancel

    class Stop(Exception):
        pass

    def boom(p):
        raise Stop

    fresh = GSNLN(epochs=5)
    with pytest.raises(Stop):
        fresh.fit(X, y, progress=boom)
    with pytest.raises(NotFittedError):
        fresh.rules()
    assert torch.get_num_threads() >= 1


@pytest.mark.parametrize(
    "X, y, message",
    [
        (np.array([[0, 2], [1, 0]]), [0.0, 1.0], "binary"),
        (np.array([[0.0, np.nan], [1, 0]]), [0.0, 1.0], "binary"),
        (np.zeros((3, 2), bool), [0.0, 1.0], "3 users"),
        (np.zeros((3, 2), bool), [1.0, 1.0, 1.0], "constant"),
        (np.zeros((3, 2), bool), [1.0, np.nan, 0.0], "NaN"),
        (np.zeros(3, bool), [1.0, 2.0, 0.0], "2-D"),
        (np.zeros((3, 0), bool), [1.0, 2.0, 0.0], "no columns"),
        (np.zeros((3, 2), bool), np.zeros((3, 2)), "1-D"),
    ],
)
def test_bad_input_is_rejected(X, y, message):
    with pytest.raises(ValueError, match=message):
        GSNLN(epochs=1).fit(X, y)


@pytest.mark.parametrize(
    "params, message",
    [
        ({"n_rules": 0}, "n_rules"),
        ({"hidden_size": 1.5}, "hidden_size"),
        ({"n_layers": 0}, "n_layers"),
        ({"batch_size": 1}, "batch_size"),
        ({"lr_start": -1.0}, "lr_start"),
        ({"temperature_end": 0}, "temperature_end"),
    ],
)
def test_bad_hyper_parameters_are_rejected_in_fit(params, message):
    student = GSNLN(**params)  # __init__ only stores
    # a value out of range is a ValueError, a value of the wrong type (1.5 layers) a TypeError
    with pytest.raises((ValueError, TypeError), match=message):
        student.fit(np.eye(4, dtype=bool), [0.0, 1.0, 2.0, 3.0])


def test_unfitted_and_mismatched_use(fitted_and):
    with pytest.raises(NotFittedError):
        GSNLN().rules()
    with pytest.raises(NotFittedError):
        GSNLN().predict(np.zeros((2, 2), bool))
    with pytest.raises(ValueError, match="12"):
        fitted_and.predict(np.zeros((2, 3), bool))
    with pytest.raises(ValueError, match="literal table has 2"):
        fitted_and.rules(["a", "b"])
    assert "n_rules=20" in repr(fitted_and)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device")
def test_cuda_matches_the_cpu_contract(planted_and):
    X, y, truth = planted_and
    student = GSNLN(n_rules=4, hidden_size=4, epochs=40, device="cuda").fit(X, y)
    np.testing.assert_allclose(student.rules().score(X), student.decision_function(X), rtol=1e-5, atol=1e-5)
    # The teacher is a 0/1 truth plus noise: no ordering beats the truth's fidelity
    # (about 0.68) by much, so that is the bar, on either device.
    best = fidelity(y, truth.astype(float))
    assert fidelity(y, student.predict(X)) >= best - 0.01
    # one seed, one run: all randomness is drawn on the CPU, so the CUDA run
    # differs from the CPU run only by float rounding
    cpu = GSNLN(n_rules=4, hidden_size=4, epochs=40).fit(X, y)
    assert abs(fidelity(y, student.predict(X)) - fidelity(y, cpu.predict(X))) <= 0.01


def test_fit_restores_thread_and_denormal_settings(planted_and):
    from rudi_explain.students.gsnln import _flushes_denormals

    X, y, _ = planted_and
    threads = torch.get_num_threads()
    try:
        for flush in (False, True):
            torch.set_flush_denormal(flush)
            GSNLN(n_rules=4, hidden_size=4, epochs=1, n_threads=1).fit(X[:300], y[:300])
            assert _flushes_denormals(torch) is flush
            assert torch.get_num_threads() == threads
    finally:
        torch.set_flush_denormal(False)
