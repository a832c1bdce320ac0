"""Stage 2's vocabulary: formulas over literals, the literal table, rule sets, the scorecard they read as,
and the steps that shape a student's rules after fitting (pruning, threshold refinement, swaps)."""

from rudi_explain.rules.formula import (
    FALSE,
    TRUE,
    And,
    Const,
    Formula,
    Lit,
    LiteralInfo,
    Or,
    format_threshold,
    format_weight,
    formula_literals,
    literal_info,
    render,
    simplify,
)
from rudi_explain.rules.literals import Literals
from rudi_explain.rules.ruleset import LinearTerm, Rule, RuleSet
from rudi_explain.rules.scorecard import Scorecard
from rudi_explain.rules.scorecard_cards import Band, Card, Linear

__all__ = ["Lit", "And", "Or", "Const", "TRUE", "FALSE", "Formula", "LiteralInfo", "literal_info", "simplify",
           "render", "format_threshold", "format_weight", "formula_literals", "Literals", "Rule", "LinearTerm",
           "RuleSet", "Scorecard", "Card", "Band", "Linear"]
