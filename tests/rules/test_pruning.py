"""Pruning: bands keep scores, the path is honest, the default obeys its bounds; explain() wiring."""

import numpy as np
import pytest

import rudi_explain as rx
from rudi_explain.metrics import fidelity
from rudi_explain.rules.formula import And, Lit, Or, formula_literals
from rudi_explain.rules.literals import Literals
from rudi_explain.rules.pruning import fold_bands, prune_rules
from rudi_explain.rules.ruleset import RuleSet


def _random_rules(rng, lits, n_rules, max_len=3):
    """Random AND/OR rules over the literals, several on one column."""
    formulas = []
    for _ in range(n_rules):
        k = rng.integers(1, max_len + 1)
        parts = tuple(Lit(int(i), bool(rng.integers(2))) for i in rng.choice(lits.n_literals, k, replace=False))
        formulas.append(parts[0] if k == 1 else (And if rng.random() < 0.7 else Or)(parts))
    # and some single-column rules on column 0 at nested thresholds
    col0 = np.flatnonzero(lits.column == 0)
    for i in rng.choice(col0, min(4, col0.size), replace=False):
        formulas.append(Lit(int(i), bool(rng.integers(2))))
    weights = rng.normal(size=len(formulas))
    return RuleSet.from_formulas(formulas, weights, 0.3, literals=lits)


def _data(seed, n=1500):
    rng = np.random.default_rng(seed)
    V = np.column_stack([rng.lognormal(3, 1, n), rng.poisson(4, n), rng.normal(size=n), rng.random(n)])
    V[rng.random(n) < 0.15, 0] = np.nan  # undefined users fall in the lowest band
    lits = Literals.from_values(V, n_quantiles=10)
    y = 0.7 * np.log1p(np.nan_to_num(V[:, 0])) + 0.3 * (V[:, 1] > 5) + V[:, 2] * 0.2 + rng.normal(0, .3, n)
    return rng, V, lits, lits.transform_values(V), y


@pytest.mark.parametrize("seed", range(5))
def test_fold_bands_keeps_every_score(seed):
    rng, V, lits, Z, y = _data(seed)
    rules = _random_rules(rng, lits, 8)
    folded = fold_bands(rules, Z)
    np.testing.assert_allclose(folded.score(Z), rules.score(Z), atol=1e-9)
    # column 0 now reads as disjoint bands: at most one of its single-column rules fires per user
    single = [k for k, r in enumerate(folded)
              if {int(lits.column[x.index]) for x in formula_literals(r.formula)} == {0}]
    assert single and (folded.fires(Z)[:, single].sum(axis=1) <= 1).all()
    # no two rules with the same condition
    assert len({r.formula for r in folded}) == len(folded)


@pytest.mark.parametrize("seed", range(3))
def test_prune_path(seed):
    rng, V, lits, Z, y = _data(seed)
    rules = _random_rules(rng, lits, 14, max_len=6)
    is_valid = rng.random(len(y)) < 0.25
    path = prune_rules(rules, Z, y, is_valid, max_rules=6, max_literals=3)
    assert path.unpruned is rules
    assert (np.diff(path.n_rules) == -1).all() and path.n_rules[-1] == 1
    for rs, fv in zip(path.rule_sets, path.fidelity_valid):
        assert rs.max_literals <= 3
        assert len({r.formula for r in rs}) == len(rs)
        # the recorded validation fidelity is that of the rule set itself
        assert fv == pytest.approx(fidelity(y[is_valid], rs.score(Z[is_valid])), abs=1e-12)
    d = path.default
    assert path.n_rules[d] <= 6
    on_all = np.array([fidelity(y, rs.score(Z)) for rs in path.rule_sets])
    ok = (path.n_rules <= 6) & (path.fidelity_valid >= path.fidelity_unpruned - 0.002) \
        & (on_all >= fidelity(y, rules.score(Z)) - 0.002)
    if ok.any():  # the fewest rules within the tolerance
        assert path.n_rules[d] == path.n_rules[ok].min()
    else:  # else the best allowed point
        assert path.fidelity_valid[d] == path.fidelity_valid[path.n_rules <= 6].max()
    assert len(path.at(3)) == 3 and len(path.at(1000)) == path.n_rules[0]
    with pytest.raises(ValueError, match="whole number"):
        path.at(0)


@pytest.fixture(scope="module")
def demo():
    return rx.datasets.make_payments(800, random_state=7)


FAST = dict(n_stats=3, n_rules=10, n_simulations=30, student_params={"epochs": 20})


@pytest.fixture(scope="module")
def exp(demo):
    return rx.explain(None, demo.events, scores=demo.risk, background=False, **FAST)


def test_explain_prunes_by_default(exp):
    r = exp.report()
    assert len(exp.scorecard) <= 10 and r["max_literals"] <= 4  # the budget counts cards and interaction rules
    assert r["n_rules_unpruned"] == len(exp.unpruned_rules) == len(exp.pruning.unpruned)
    curve = exp.fidelity_curve
    assert list(curve.columns) == ["n_rules", "fidelity_valid", "fidelity_test", "max_literals", "default"]
    assert curve["default"].sum() == 1
    # the curve's point at the default is the pruning's default rule set (the scorecard is refitted from it)
    point = curve[curve["default"]].iloc[0]
    default = exp.pruning.default_rules
    assert point["n_rules"] == len(default)
    y, s = exp.teacher_scores.to_numpy(), exp.student_scores.to_numpy()
    Z = exp.result.literal_matrix[exp.is_test]
    assert point["fidelity_test"] == pytest.approx(fidelity(y[exp.is_test], default.score(Z)), abs=1e-12)
    assert r["fidelity_test"] == pytest.approx(fidelity(y[exp.is_test], s[exp.is_test]))
    # no rule twice (a linear term by its statistic output)
    assert len({getattr(rule, "formula", ("linear", getattr(rule, "column", None))) for rule in exp.rules}) \
        == len(exp.rules)


def test_with_rules_moves_along_the_curve(exp):
    curve = exp.fidelity_curve
    for k in (1, 2, int(curve.n_rules.max())):
        other = exp.with_rules(k)
        assert len(other.rules) == k
        row = curve[curve.n_rules == k].iloc[0]
        assert other.report()["fidelity_test"] == pytest.approx(row["fidelity_test"], abs=1e-12)
        u = other.user(other.sequences.users[0])
        assert u.student_score == pytest.approx(other.rules.score(other.result.literal_matrix[:1])[0])
    assert len(exp.pruning.default_rules) == int(curve[curve["default"]].n_rules.iloc[0])  # the original is unchanged


@pytest.mark.slow
def test_pruning_uses_no_held_out_user(demo, exp):
    # Scramble the teacher's scores of the held-out users only: the pruned rules must not change.
    scores = demo.risk.copy()
    test_users = exp.sequences.users[exp.is_test]
    rng = np.random.default_rng(0)
    scores.loc[test_users] = rng.permutation(scores.loc[test_users].to_numpy()) * 3 - 1
    other = rx.explain(None, demo.events, scores=scores, background=False, **FAST)
    np.testing.assert_array_equal(other.is_test, exp.is_test)
    assert [str(r) for r in other.pruning.rule_sets] == [str(r) for r in exp.pruning.rule_sets]


@pytest.mark.slow
def test_unpruned_on_request(demo):
    e = rx.explain(None, demo.events, scores=demo.risk, background=False, prune=False, **FAST)
    assert e.pruning is None and e.rules is e.unpruned_rules
    with pytest.raises(ValueError, match="not pruned"):
        _ = e.fidelity_curve


def test_net_effects_against_a_hand_built_user(exp):
    from rudi_explain.views import payloads as ws

    effects = ws.net_effects(exp)
    L, Z = exp.literals, exp.result.literal_matrix
    # the steps are the rules' (bands and interaction rules); a linear term is a line on its own card
    formula_rules = [r for r in exp.rules if hasattr(r, "formula")]
    used = {int(L.column[x.index]) for r in formula_rules for x in formula_literals(r.formula)}
    assert {e["column"] for e in effects} == used  # one picture per statistic output the rules use
    mode = Z.mean(axis=0) >= 0.5
    for e in effects:
        c = e["column"]
        t = np.array(e["thresholds"], dtype=float)
        # a value inside each band: below the first threshold, between two, above the last
        # (the next float out, not +-1: an "is defined" literal's threshold is the lowest float)
        inside = np.concatenate([[np.nextafter(t[0], -np.inf)], (t[:-1] + t[1:]) / 2, [np.nextafter(t[-1], np.inf)]])
        scores = []
        for v in inside:
            row = mode.copy()
            mine = np.flatnonzero(L.column == c)
            row[mine] = v > L.thresholds[mine]  # every literal on this output, from the value itself
            scores.append(sum(r.weight * bool(r.fires(row[None, :])[0]) for r in formula_rules))
        scores = np.array(scores)
        np.testing.assert_allclose(e["effect"], scores - scores[e["base_band"]], atol=1e-5)
        # users per band add up to everyone; the baseline band is the most common one
        assert sum(e["n_band"]) == exp.sequences.n_users and e["n_band"][e["base_band"]] == max(e["n_band"])
        assert sum(e["counts"]) + e["n_undefined"] == exp.sequences.n_users


def test_pruning_path_json_round_trip(exp):
    import json

    from rudi_explain.rules.pruning import PruningPath

    d = json.loads(json.dumps(exp.pruning.to_dict()))
    back = PruningPath.from_dict(d, exp.literals)
    Z = exp.result.literal_matrix
    assert back.default == exp.pruning.default and back.n_rules.tolist() == exp.pruning.n_rules.tolist()
    for a, b in zip(back.rule_sets + [back.unpruned], exp.pruning.rule_sets + [exp.pruning.unpruned]):
        np.testing.assert_array_equal(a.score(Z), b.score(Z))
        assert [r.text for r in a] == [r.text for r in b]
    d["default"] = 99
    with pytest.raises(ValueError, match="default point 99"):
        PruningPath.from_dict(d, exp.literals)
    with pytest.raises(ValueError, match="not a rudi-explain pruning path"):
        PruningPath.from_dict({}, exp.literals)


# --------------------------------------------------------------------------- speed: the same figures, less work
@pytest.mark.parametrize("seed", range(4))
def test_drop_losses_are_the_fidelity_of_every_rule_set_without_one_rule(seed):
    # one score per firing pattern, ranks gathered to users: exactly metrics.fidelity of scoring every user,
    # with ties in the teacher (rounded scores) and between rule sets (equal weights) on some seeds
    from rudi_explain.metrics import Agreement
    from rudi_explain.rules.pruning import _drop_losses, _sum_scores

    rng, V, lits, Z, y = _data(seed)
    rules = _random_rules(rng, lits, 10)
    F = rules.fires(Z)
    weights = np.round(rules.weights, 1) if seed % 2 else rules.weights
    y = np.round(y, 1) if seed >= 2 else y
    expected = [fidelity(y, _sum_scores(0.3, F, weights, skip=k)) for k in range(F.shape[1])]
    assert _drop_losses(Agreement(y), 0.3, F, weights).tolist() == expected


def test_pruning_scores_no_candidate_by_sorting_every_user(monkeypatch):
    # each candidate drop used to cost metrics.fidelity on every training user (two sorts of them); now
    # the teacher is ranked once, and the path's figures are still exactly metrics.fidelity's
    import rudi_explain.metrics as metrics

    rng, V, lits, Z, y = _data(0)
    rules = _random_rules(rng, lits, 14, max_len=6)
    is_valid = rng.random(len(y)) < 0.25
    calls = []
    count_pairs = metrics.count_pairs  # what fidelity (and Agreement's fallback) sorts every user with
    monkeypatch.setattr(metrics, "count_pairs", lambda *a: calls.append(1) or count_pairs(*a))
    path = prune_rules(rules, Z, y, is_valid, max_rules=6, max_literals=3)
    assert calls == []
    assert path.fidelity_unpruned == fidelity(y[is_valid], rules.score(Z[is_valid]))
    assert path.fidelity_valid.tolist() == [fidelity(y[is_valid], rs.score(Z[is_valid])) for rs in path.rule_sets]


@pytest.mark.parametrize("seed", range(2))
def test_the_same_path_on_one_and_two_threads(seed, monkeypatch):
    # the candidate drops of a step are independent: scored on two threads, the same figures and rules
    import rudi_explain.rules.pruning as pruning

    rng, V, lits, Z, y = _data(seed)
    rules = _random_rules(rng, lits, 14, max_len=6)
    is_valid = rng.random(len(y)) < 0.25
    monkeypatch.setattr(pruning, "PARALLEL_USERS", 0)
    paths = []
    for n_jobs in (1, 2):
        monkeypatch.setattr(pruning, "N_JOBS", n_jobs)
        paths.append(prune_rules(rules, Z, y, is_valid, max_rules=6, max_literals=3).to_dict())
    assert paths[0] == paths[1]


def test_rules_to_drop_are_ranked_on_a_sample_of_many_users(monkeypatch):
    # beyond RANK_USERS training users the drops are ranked on a fixed sample (the figures of the path stay
    # exact on every user): the default point is as faithful as ranking on all users, within a margin,
    # on most seeds; and the path is the same on every run
    import rudi_explain.rules.pruning as pruning

    close = 0
    for seed in range(4):
        rng, V, lits, Z, y = _data(seed, n=6000)
        rules = _random_rules(rng, lits, 14, max_len=6)
        is_valid = rng.random(len(y)) < 0.25
        full = prune_rules(rules, Z, y, is_valid, max_rules=6, max_literals=3)
        monkeypatch.setattr(pruning, "RANK_USERS", 1500)
        sampled = prune_rules(rules, Z, y, is_valid, max_rules=6, max_literals=3)
        assert sampled.to_dict() == prune_rules(rules, Z, y, is_valid, max_rules=6, max_literals=3).to_dict()
        monkeypatch.undo()
        assert sampled.fidelity_valid.tolist() == [fidelity(y[is_valid], rs.score(Z[is_valid]))
                                                   for rs in sampled.rule_sets]
        f_full = fidelity(y, full.rule_sets[full.default].score(Z))
        f_sampled = fidelity(y, sampled.rule_sets[sampled.default].score(Z))
        close += f_sampled >= f_full - 0.01
    assert close >= 3


@pytest.mark.parametrize("seed", range(3))
def test_pair_counts_by_pattern_give_the_same_path_as_sorting_users(seed, monkeypatch):
    # candidate drops scored from pair counts by firing pattern (carried from step to step, merged as rules
    # go) against ranking every user: the same path, figures and default, with and without ties
    import rudi_explain.rules.pruning as pruning

    rng, V, lits, Z, y = _data(seed)
    y = np.round(y, 1) if seed == 1 else y
    rules = _random_rules(rng, lits, 14, max_len=6)
    is_valid = rng.random(len(y)) < 0.25
    by_patterns = prune_rules(rules, Z, y, is_valid, max_rules=6, max_literals=3).to_dict()
    monkeypatch.setattr(pruning, "PATTERN_CELLS", 0)
    assert prune_rules(rules, Z, y, is_valid, max_rules=6, max_literals=3).to_dict() == by_patterns


@pytest.mark.parametrize("seed", range(3))
def test_merged_pattern_pairs_equal_those_counted_anew(seed):
    # dropping a rule merges firing patterns: the merged counts equal those of the coarser patterns, and each
    # student's fidelity equals metrics.fidelity on every user
    from rudi_explain.metrics import Agreement
    from rudi_explain.rules.pruning import _PatternPairs

    rng = np.random.default_rng(seed)
    n = 3000
    y = np.round(rng.normal(size=n), 1 if seed else 6)
    F = rng.random((n, 6)) < rng.uniform(0.1, 0.6, 6)

    def patterns(G):
        codes = (G * (1 << np.arange(G.shape[1]))).sum(axis=1)
        return np.unique(codes, return_inverse=True)[1].reshape(-1)

    agreement = Agreement(y)
    fine = patterns(F)
    coarse = patterns(F[:, 1:])
    mapping = np.zeros(fine.max() + 1, dtype=np.int64)
    mapping[fine] = coarse
    merged = _PatternPairs(agreement, fine, fine.max() + 1).merged(mapping, coarse.max() + 1)
    anew = _PatternPairs(agreement, coarse, coarse.max() + 1)
    assert np.array_equal(merged.M, anew.M) and np.array_equal(merged.size, anew.size)
    s = np.round(rng.normal(size=coarse.max() + 1), 1)
    assert merged.fidelity(s) == fidelity(y, s[coarse])
