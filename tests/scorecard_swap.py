"""An explanation with its scorecard replaced: the rules, literals, scores and scorecard all read off the new one.

Audit tests build scorecards a search rarely gives (a linear card, an interaction rule on a band edge) and
need the explanation around them to be consistent, as ``explain()`` would leave it.
"""

from __future__ import annotations

import dataclasses

from rudi_explain.explanation.result import read_scorecard, score_series


def with_scorecard(a, scorecard):
    """``a`` (an Explanation) with ``scorecard``'s rule form as its rules, scored on its own statistic values."""
    rules = scorecard.to_rules()
    V = a.result.values
    M = rules.matrix(V)
    y = a.teacher_scores
    table = rules.literal_table()
    state = dataclasses.replace(
        a.result, rules=rules, literals=table, literal_matrix=table.transform_values(V), fires=rules.fires(M),
        student_scores=score_series(rules.score(M), y.index, "student"), pruning=None, unpruned_rules=None,
        scorecard=read_scorecard(rules, V, y.to_numpy(), a.is_test))
    return a.with_result(state)
