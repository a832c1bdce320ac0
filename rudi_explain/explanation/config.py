"""The settings of :func:`~rudi_explain.explanation.explain`, with their one set of defaults.

:class:`ExplainConfig` holds every setting ``explain()`` takes besides the model, the data and
the scores or labels. Its defaults are the only ones: ``explain()``'s signature reads them from
:data:`DEFAULTS`, and the job reads the config, never a default of its own. Building one checks
every field (:mod:`rudi_explain.validation`), so a bad setting fails before any work.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

import numpy as np

from rudi_explain.exceptions import InputError, InputTypeError
from rudi_explain.rules.pruning import MAX_LITERALS, MAX_RULES
from rudi_explain.search.given import read_statistics
from rudi_explain.statistics import Statistic
from rudi_explain.statistics.readable import GRAMMARS
from rudi_explain.validation import check_one_of, check_random_state_seed, check_real, check_whole

__all__ = ["ExplainConfig", "DEFAULTS", "SAVED", "STUDENTS", "BACKGROUNDS"]

#: Students by name, for ``explain(student=...)``.
STUDENTS = ("gsnln", "trees", "brl", "hkl", "cart", "lasso")
#: What ``explain(background=...)`` takes.
BACKGROUNDS = (True, False, "thread")
#: The settings written into a saved explanation (``"params"``), in the order they are written.
SAVED = ("n_stats", "max_depth", "n_rules", "student", "random_state", "test_size", "n_simulations", "batch_size",
         "grammar", "search_params", "student_params", "in_users_order", "prune", "max_rules", "max_literals",
         "validation_size", "n_quantiles", "refine", "statistics", "search")

_EMPTY: Mapping[str, Any] = MappingProxyType({})


def _frozen_mapping(value: Mapping[str, Any] | None, name: str) -> Mapping[str, Any]:
    """A read-only copy of a dict of options (None: none)."""
    if value is None:
        return _EMPTY
    try:
        return MappingProxyType(dict(value))
    except (TypeError, ValueError):
        raise InputTypeError(f"{name} must be a dict of options, got {type(value).__name__}") from None


@dataclass(frozen=True)
class ExplainConfig:
    """Every setting of :func:`~rudi_explain.explanation.explain`, checked.

    The fields are ``explain()``'s parameters of the same names (see its docstring). Those in
    :data:`SAVED` are written into a saved explanation (:meth:`to_params`); ``user``, ``time``,
    ``categorical``, ``numerical``, ``background`` and ``teacher_params`` say how the data is
    read and the job run, and are not.

    ``statistics`` is held as a tuple of statistic texts (None: none given), each read and
    bounded here (:func:`rudi_explain.search.given.read_statistics`); :attr:`given_statistics`
    gives them back as :class:`Statistic` objects. A saved file records them as a list of texts.

    Raises
    ------
    InputError, InputTypeError
        A setting out of its range or of the wrong type, naming it and the value given.
    """

    n_stats: int = 20
    max_depth: int = 4
    n_rules: int = 20
    student: Any = "gsnln"
    random_state: int | None = 0
    test_size: float = 0.2
    n_simulations: int = 500
    batch_size: int = 128
    grammar: str = "readable"
    search_params: Mapping[str, Any] | None = None
    student_params: Mapping[str, Any] | None = None
    in_users_order: bool = False
    prune: bool = True
    max_rules: int = MAX_RULES
    max_literals: int = MAX_LITERALS
    validation_size: float = 0.2
    n_quantiles: int = 10
    refine: bool = True
    statistics: Any = None
    search: bool = True
    user: str = "user_id"
    time: str | None = "ts"
    categorical: list[str] | None = None
    numerical: list[str] | None = None
    background: bool | str = True
    teacher_params: Mapping[str, Any] | None = None

    def __post_init__(self) -> None:
        def put(name: str, value: Any) -> None:
            object.__setattr__(self, name, value)

        check_one_of(self.background, "background", BACKGROUNDS)
        for name in ("test_size", "validation_size"):
            put(name, check_real(getattr(self, name), name, min_value=0.0, max_value=1.0, include_min=False,
                                 include_max=False))
        for name in ("n_stats", "max_depth", "n_rules", "n_simulations", "batch_size", "max_rules", "max_literals",
                     "n_quantiles"):
            put(name, check_whole(getattr(self, name), name, min_value=1))
        put("random_state", check_random_state_seed(self.random_state))
        check_one_of(self.grammar, "grammar", GRAMMARS)
        if isinstance(self.student, str):
            check_one_of(self.student, "student", STUDENTS)
        for name in ("search_params", "student_params", "teacher_params"):
            put(name, _frozen_mapping(getattr(self, name), name))
        for name in ("in_users_order", "prune", "refine"):
            put(name, bool(getattr(self, name)))
        if not isinstance(self.search, (bool, np.bool_)):
            raise InputTypeError(f"search must be True or False, got {self.search!r}")
        put("search", bool(self.search))
        given = read_statistics(self.statistics)
        put("statistics", tuple(str(st) for st in given) or None)
        if not self.search and not given:
            raise InputError("search=False uses only the statistics given, and none were: pass statistics=[...] "
                             "(statistic texts or Statistics), or leave search=True")

    @property
    def given_statistics(self) -> tuple[Statistic, ...]:
        """The statistics given (``statistics``), as :class:`Statistic` objects in their order; empty if none."""
        return tuple(Statistic.parse(text) for text in self.statistics or ())

    @property
    def student_name(self) -> str:
        """The student's name: one of :data:`STUDENTS`, or the class name of the estimator given."""
        return self.student if isinstance(self.student, str) else type(self.student).__name__

    def to_params(self) -> dict[str, Any]:
        """The settings in :data:`SAVED` as a plain dict, in that order (what a saved file's ``"params"`` holds)."""
        out = {}
        for name in SAVED:
            value = getattr(self, name)
            out[name] = dict(value) if isinstance(value, Mapping) else list(value) if isinstance(value, tuple) \
                else value
        return out

    def replace(self, **changes: Any) -> ExplainConfig:
        """A checked copy with some settings changed."""
        return dataclasses.replace(self, **changes)


#: The defaults of every setting: ``explain()``'s signature reads them here.
DEFAULTS = ExplainConfig()
