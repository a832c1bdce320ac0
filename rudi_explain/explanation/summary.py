"""How an :class:`~rudi_explain.explanation.Explanation` reads as text: its repr and ``print(exp)``.

``repr(exp)`` is one line; ``str(exp)`` is that line, the sentence that says
which form of scorecard explain() kept and on what evidence
(:class:`~rudi_explain.explanation.scorecard_choice.ScorecardChoice`), and
then the scorecard's text form (SEMANTICS.md, "The scorecard"), or the rules
where they are no scorecard (a rule list).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rudi_explain.explanation.config import DEFAULTS
from rudi_explain.explanation.figures import held_out_fidelity
from rudi_explain.explanation.result import FittedState

__all__ = ["settings_text", "summary_line", "full_text", "size_text", "done_text", "choice_text"]

#: the settings a running explanation's repr names when they differ from the defaults
_KEY_SETTINGS = ("n_stats", "max_depth", "n_rules", "student", "random_state", "n_simulations", "grammar",
                 "max_rules", "test_size", "prune")


def settings_text(inputs: Any, params: Mapping[str, Any]) -> str:
    """The teacher and the settings that differ from the defaults, as code would say them.

    Parameters
    ----------
    inputs : JobInputs or None
        ``explain()``'s teacher (or scores); None for a loaded explanation.
    params : mapping
        ``explain()``'s settings by name.
    """
    teacher = ("given scores" if inputs.teacher is None else f"{inputs.teacher.kind} teacher") \
        if inputs is not None else "loaded"
    changed = [f"{name}={value!r}" for name, value in params.items()
               if name in _KEY_SETTINGS and value != getattr(DEFAULTS, name)]
    return ", ".join([teacher, *changed]) if changed else f"{teacher}, default settings"


def summary_line(state: FittedState, report: Mapping[str, Any]) -> str:
    """One line: users, statistics, the scorecard's cards and interaction rules (or the rules), held-out fidelity.

    Parameters
    ----------
    state : FittedState
    report : mapping
        :meth:`Explanation.report`'s figures.
    """
    return (f"Explanation({report['n_users']:,} users, {report['n_statistics']} statistics, {size_text(state)}; "
            f"fidelity {report['fidelity_test']:.3f} held out)")


def done_text(state: FittedState) -> str:
    """The job's 'done' line: its size, held-out fidelity and seconds.

    Not from :meth:`Explanation.report`: its bootstrap interval (200 fidelities, 0.1 s at 5,000 users) waits
    until it is asked for.
    """
    return (f"{size_text(state)}, fidelity {held_out_fidelity(state):.3f} on {int(state.is_test.sum()):,} "
            f"held-out users in {state.seconds['total']:.1f} s")


def size_text(state: FittedState) -> str:
    """'2 cards and 5 interaction rules' (the units ``max_rules`` counts); '7 rules' for a rule list."""
    sc = state.scorecard
    if sc is None:
        return _count(len(state.rules), "rule")
    return f"{_count(len(sc.cards), 'card')} and {_count(len(sc.interactions), 'interaction rule')}"


def full_text(state: FittedState, report: Mapping[str, Any]) -> str:
    """:func:`summary_line`, then :func:`choice_text` and the scorecard's text form (the rules without a scorecard)."""
    if state.scorecard is None:
        return f"{summary_line(state, report)}\n\n{state.rules}"
    choice = choice_text(state)
    return f"{summary_line(state, report)}\n\n" + (f"{choice}\n\n" if choice else "") + str(state.scorecard)


def choice_text(state: FittedState) -> str:
    """The sentence saying which form of scorecard explain() kept and why; "" where none was weighed.

    "" also for a rule list (no scorecard) and for a result built without one (not pruned).
    """
    choice = getattr(state, "scorecard_choice", None)
    return "" if choice is None or state.scorecard is None else choice.text()


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}{'' if n == 1 else 's'}"
