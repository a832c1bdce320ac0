"""A node of the MCTS-SG search tree: a partial pipeline, its untried operators and its statistics."""

from __future__ import annotations

from rudi_explain.statistics import Pipeline
from rudi_explain.statistics.operators import Operator

__all__ = ["Node"]


class Node:
    __slots__ = ("pipeline", "parent", "children", "untried", "visits", "total", "best", "terminal", "dead")

    def __init__(self, pipeline: Pipeline, parent: Node | None, untried: list[Operator]):
        self.pipeline = pipeline
        self.parent = parent
        self.children: list[Node] = []
        self.untried = untried
        self.visits = 0
        self.total = 0.0
        self.best = 0.0
        self.terminal = pipeline.complete
        self.dead = False
