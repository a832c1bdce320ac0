"""Which form of scorecard explain() kept, and on what evidence: one sentence where the scorecard is introduced.

explain()'s post-processing weighs up to four forms of scorecard on validation
users (:func:`rudi_explain.rules.scorecard_additive.choose_scorecard`), the
plainest first: every statistic as a card binned afresh, the same offered
finer edges (quantiles of its values), every statistic as a card with the
student's interaction rules, and the student's own cards and interaction
rules; a form with interaction rules is kept only where it is more faithful by
the tie. A reader (an
auditor) must be able to tell which was kept and by how much (issue 26, "What
the reader sees must be true"), so the choice travels with the explanation
(:attr:`FittedState.scorecard_choice <rudi_explain.explanation.result.FittedState>`),
is saved in its file, and :meth:`ScorecardChoice.text` says it in one sentence.

A choice describes the rules it was made for only. When an explanation's rules
are replaced (another point of the fidelity curve, a moved threshold),
:meth:`ScorecardChoice.bound_to` marks it, and the sentence says so rather than
claim a choice that no longer describes the rules.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from rudi_explain.rules.scorecard_additive import MIN_USERS, TIE

__all__ = ["ScorecardChoice", "choice_from_meta", "FORMS", "STATUSES", "EDITS", "IDLE_TIE"]

#: How the sentence names each form (the names :func:`~rudi_explain.rules.scorecard_additive.scorecard_candidates`
#: gives); a form not listed is named as it is.
FORMS: Mapping[str, str] = MappingProxyType({
    "student": "the student's cards",
    "additive": "every statistic as a card",
    "additive with interactions": "every statistic as a card with the student's interaction rules",
    "additive, finer edges": "every statistic as a card offered finer edges",
})
#: ``chosen``: weighed on validation users; ``too few users``: fewer than ``min_users`` validation (or fitting)
#: users, the student's cards kept unweighed; ``one form``: only the student's cards were offered;
#: ``unknown``: a file saved before the choice was recorded.
STATUSES = ("chosen", "too few users", "one form", "unknown")
#: The validation fidelity a card or interaction rule must add to the kept scorecard to stay: explain()'s
#: post-processing leaves out the others (:func:`rudi_explain.explanation.scorecard_step.prune_to_scorecard`).
IDLE_TIE = 5e-4
#: ``another point``: the rules are another point of the fidelity curve; ``moved``: a threshold was moved.
EDITS = ("", "another point", "moved")


def _form(name: str) -> str:
    return FORMS.get(name, name)


@dataclass(frozen=True)
class ScorecardChoice:
    """The form of scorecard explain() kept, each form's validation fidelity, and how many users chose.

    Attributes
    ----------
    status : str
        One of :data:`STATUSES`.
    chosen : str or None
        The form kept (a key of :data:`FORMS`); None where unknown.
    fidelity : mapping of str to float
        Each form's fidelity on the validation users, in the order they were weighed (empty unless ``chosen``).
    n_valid, n_fit : int
        The validation users the forms were scored on, and the fitting users they were fitted on.
    min_users : int
        The fewest of each a choice is made on.
    tie : float
        The validation fidelity a form weighed later must gain over the best before it to replace it.
    edit : str
        One of :data:`EDITS`: "" while the explanation's rules are the ones chosen.
    n_added : int
        Interaction rules found for the kept form's cards after the choice (pairs of statistics, on what the
        cards leave unexplained): on the scorecard shown, not in the validation fidelities.
    dropped_cards, dropped_rules : tuple of str
        The cards (their statistic outputs) and interaction rules (their text) then left out, each because
        the validation users found the scorecard refitted without it at most ``idle_tie`` less faithful.
    idle_tie : float
        That margin.
    """

    status: str
    chosen: str | None = None
    fidelity: Mapping[str, float] = field(default_factory=dict)
    n_valid: int = 0
    n_fit: int = 0
    min_users: int = MIN_USERS
    tie: float = TIE
    edit: str = ""
    n_added: int = 0
    dropped_cards: tuple[str, ...] = ()
    dropped_rules: tuple[str, ...] = ()
    idle_tie: float = IDLE_TIE
    # the rules this choice describes, and the moves made by then (not saved: bound when a FittedState is built)
    rules: Any = field(default=None, compare=False, repr=False)
    n_moved: int = field(default=0, compare=False, repr=False)

    def __post_init__(self) -> None:
        if self.status not in STATUSES:
            raise ValueError(f"status must be one of {STATUSES}, got {self.status!r}")
        if self.edit not in EDITS:
            raise ValueError(f"edit must be one of {EDITS}, got {self.edit!r}")
        object.__setattr__(self, "fidelity", MappingProxyType({str(k): float(v) for k, v in self.fidelity.items()}))
        object.__setattr__(self, "dropped_cards", tuple(str(d) for d in self.dropped_cards))
        object.__setattr__(self, "dropped_rules", tuple(str(d) for d in self.dropped_rules))
        if self.status == "chosen" and self.chosen not in self.fidelity:
            raise ValueError(f"the chosen form {self.chosen!r} has no validation fidelity")

    @classmethod
    def unknown(cls) -> ScorecardChoice:
        """The choice of an explanation saved before choices were recorded."""
        return cls("unknown")

    @classmethod
    def weighed(cls, chosen: str, fidelity: Mapping[str, float], n_valid: int, n_fit: int, *,
                n_forms: int = 3, n_added: int = 0, dropped: tuple[tuple[str, ...], tuple[str, ...]] = ((), ())
                ) -> ScorecardChoice:
        """What :func:`~rudi_explain.rules.scorecard_additive.choose_scorecard` returned, as a choice.

        Parameters
        ----------
        chosen : str
            The form kept.
        fidelity : mapping
            Each form's validation fidelity; empty where too few users made no choice.
        n_valid, n_fit : int
            The validation and fitting users the forms were scored and fitted on.
        n_forms : int, default=3
            How many forms were offered (1: only the student's).
        n_added : int, default=0
            Interaction rules added to the kept form's cards after the choice.
        dropped : (tuple of str, tuple of str), default=((), ())
            The cards and the interaction rules then left out.
        """
        status = "one form" if n_forms == 1 else "too few users" if not fidelity else "chosen"
        return cls(status, chosen, fidelity if status == "chosen" else {}, n_valid=n_valid, n_fit=n_fit,
                   n_added=n_added, dropped_cards=dropped[0], dropped_rules=dropped[1])

    def bound_to(self, rules: Any, n_moved: int) -> ScorecardChoice:
        """This choice as it describes ``rules``: marked as an edit when they are not the rules it was made for.

        Parameters
        ----------
        rules : RuleSet
            The explanation's rules now.
        n_moved : int
            How many threshold moves the explanation has had (``len(moved_thresholds)``).
        """
        if self.rules is None:  # a fresh or loaded choice: it describes the rules it is built with
            return dataclasses.replace(self, rules=rules, n_moved=n_moved)
        if self.rules is rules:
            return self
        edit = self.edit if self.edit == "another point" else ("moved" if n_moved > self.n_moved else "another point")
        return dataclasses.replace(self, edit=edit, rules=rules, n_moved=n_moved)

    # -- text -----------------------------------------------------------------

    def text(self) -> str:
        """Plain sentences: the form kept, on how many validation users, each form's fidelity (3 decimals); then
        the interaction rules added and the units left out, where any (:meth:`sentences`, joined).

        e.g. "Chosen on 800 validation users: every statistic as a card (fidelity 0.874) over the student's
        cards (0.861) and every statistic as a card with the student's interaction rules (0.870)."
        """
        return " ".join(self.sentences())

    def sentences(self) -> list[str]:
        """:meth:`text` as its sentences, each shown whole (a view shortens a text past 500 characters)."""
        if self.edit == "another point":
            return ["Another point of the fidelity curve, read off the pruned rules as they are: not the scorecard "
                    "explain() chose."]
        out = [self._own_text()]
        if self.n_added and self.status != "unknown":
            rules = "interaction rule was" if self.n_added == 1 else "interaction rules were"
            out.append(f"Then {self.n_added} {rules} found for its cards and added "
                       f"({'not in these figures' if self.status == 'chosen' else 'pairs of statistics'}).")
        if (self.dropped_cards or self.dropped_rules) and self.status != "unknown":
            # the cards by name (a statistic output each); the rules, often long, counted (their texts are saved)
            gone = [f"{len(self.dropped_cards)} card{'s' * (len(self.dropped_cards) != 1)} "
                    f"({_join(list(self.dropped_cards))})"] if self.dropped_cards else []
            if self.dropped_rules:
                n = len(self.dropped_rules)
                gone.append(f"{n} interaction rule{'s' * (n != 1)}")
            one = len(self.dropped_cards) + len(self.dropped_rules) == 1
            was, each = ("was", "it") if one else ("were", "each")
            out.append(f"Then {_join(gone)} {was} left out, the validation users finding the scorecard at most "
                       f"{self.idle_tie:g} less faithful without {each}.")
        if self.edit == "moved":
            out[0] = f"Before a threshold was moved (what-if): {out[0][0].lower()}{out[0][1:]}"
        return out

    def _own_text(self) -> str:
        if self.status == "unknown":
            return "How this scorecard was chosen is unknown: it was saved before explain() recorded it."
        if self.status == "one form":
            return "The student's cards: no other form of scorecard was weighed."
        if self.status == "too few users":
            few, who = (self.n_valid, "validation") if self.n_valid < self.min_users else (self.n_fit, "fitting")
            return (f"No other form of scorecard was weighed against {_form(self.chosen or 'student')}: "
                    f"{few:,} {who} users, fewer than the {self.min_users:,} a choice needs.")
        chosen = self.chosen or ""
        best = self.fidelity[chosen]
        others = []
        for name, f in self.fidelity.items():
            if name != chosen:
                # a form weighed later replaces the best before it only when it gains more than the tie
                close = f", at most {self.tie:.3f} better" if f > best else ""
                others.append(f"{_form(name)} ({f:.3f}{close})")
        over = f" over {_join(others)}" if others else ""
        users = "validation user" if self.n_valid == 1 else "validation users"
        return f"Chosen on {self.n_valid:,} {users}: {_form(chosen)} (fidelity {best:.3f}){over}."

    def __str__(self) -> str:
        return self.text()

    # -- persistence ----------------------------------------------------------

    def to_dict(self) -> dict:
        """A JSON-ready dict (the bound rules are not in it); :meth:`from_dict` reads it back."""
        return {"status": self.status, "chosen": self.chosen, "fidelity": dict(self.fidelity),
                "n_valid": self.n_valid, "n_fit": self.n_fit, "min_users": self.min_users, "tie": self.tie,
                "edit": self.edit, "n_added": self.n_added, "dropped_cards": list(self.dropped_cards),
                "dropped_rules": list(self.dropped_rules), "idle_tie": self.idle_tie}

    @classmethod
    def from_dict(cls, d: Any) -> ScorecardChoice:
        """Read :meth:`to_dict`'s dict, checking every field's type.

        Raises
        ------
        ValueError
            Naming the field that is missing or of the wrong type.
        """
        if not isinstance(d, dict):
            raise ValueError(f"expected an object, got {type(d).__name__}")
        kinds: tuple[tuple[str, Any], ...] = (
            ("status", str), ("chosen", (str, type(None))), ("fidelity", dict), ("n_valid", int), ("n_fit", int),
            ("min_users", int), ("tie", (int, float)), ("edit", str))
        for key, types in kinds:
            value = d.get(key)
            if not isinstance(value, types) or isinstance(value, bool):
                raise ValueError(f"{key!r} is missing or of the wrong type ({type(value).__name__})")
        n_added = d.get("n_added", 0)
        if not isinstance(n_added, int) or isinstance(n_added, bool) or n_added < 0:
            raise ValueError("'n_added' is not a whole number")
        dropped = []
        for key in ("dropped_cards", "dropped_rules"):
            texts = d.get(key, [])  # files saved before units were left out have none
            if not isinstance(texts, list) or not all(isinstance(x, str) for x in texts):
                raise ValueError(f"{key!r} is not a list of texts")
            dropped.append(tuple(texts))
        idle_tie = d.get("idle_tie", IDLE_TIE)
        if not isinstance(idle_tie, (int, float)) or isinstance(idle_tie, bool) or not 0.0 <= idle_tie <= 1.0:
            raise ValueError("'idle_tie' is not a number from 0 to 1")
        for name, f in d["fidelity"].items():
            if not isinstance(f, (int, float)) or isinstance(f, bool) or not 0.0 <= f <= 1.0:
                raise ValueError(f"the fidelity of {name!r} is not a number from 0 to 1")
        return cls(d["status"], d["chosen"], d["fidelity"], d["n_valid"], d["n_fit"], d["min_users"],
                   float(d["tie"]), d["edit"], n_added, dropped[0], dropped[1], float(idle_tie))


def choice_from_meta(meta: Mapping[str, Any]) -> ScorecardChoice | None:
    """The choice saved in an explanation file's JSON; "unknown" for a pruned file saved before choices were.

    Parameters
    ----------
    meta : mapping
        The file's ``explanation.json``.

    Returns
    -------
    ScorecardChoice or None
        None where the file says none was weighed (``null``), or predates choices and has no pruning path
        (not pruned: its scorecard, if any, is read off the rules as they are).

    Raises
    ------
    ValueError
        A saved choice whose fields are missing or of the wrong type.
    """
    if "scorecard_choice" not in meta:  # an older file: a pruned explanation had a choice, not recorded
        return ScorecardChoice.unknown() if meta.get("pruning") is not None else None
    saved = meta["scorecard_choice"]
    return None if saved is None else ScorecardChoice.from_dict(saved)


def _join(parts: list[str]) -> str:
    return parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " and " + parts[-1]
