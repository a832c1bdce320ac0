"""The Faithfulness tab's "fidelity by slice": held-out fidelity per value of each categorical column.

Each user is filed under their most common value of the column
(:func:`rudi_explain.explanation.figures.user_categories`); the largest
slices are shown, the rest lumped into one, so the page needs no kernel to
switch columns (the report shows it too). ``exp.fidelity_by(column)`` gives
the whole table.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from rudi_explain.audit.jsonable import json_float as _num
from rudi_explain.explanation.figures import MIN_SLICE, fidelity_by, user_categories

if TYPE_CHECKING:
    from rudi_explain.explanation import Explanation

__all__ = ["fidelity_slices", "MAX_SLICES", "MAX_COLUMNS", "OTHER"]

#: Slices shown per column (largest first); the others are lumped into :data:`OTHER`.
MAX_SLICES = 12
#: Categorical columns offered, in the data's order.
MAX_COLUMNS = 8
#: The slice the smaller values are lumped into.
OTHER = "(other values)"


def fidelity_slices(exp: Explanation, max_slices: int = MAX_SLICES, max_columns: int = MAX_COLUMNS) -> list[dict]:
    """Per categorical column (at most ``max_columns``, those that split the held-out users): the slices' rows.

    Each entry: ``column``, ``fidelity_all`` (over all held-out users), ``min_users`` (the fewest users a
    slice needs for a figure) and ``rows``, one per slice: ``value``, ``n_users``, ``share``, ``fidelity``
    (None below ``min_users`` or where the teacher gives the slice one score), ``teacher_mean``.
    """
    state = exp.ready_result("the fidelity by slice")
    test = state.is_test
    out: list[dict] = []
    for column in exp.sequences.categorical:
        if len(out) >= max_columns:
            break
        groups = user_categories(exp.sequences, column)
        values, counts = np.unique(groups[test].astype(str), return_counts=True)
        if len(values) < 2:
            continue  # one slice: nothing to compare
        keep = set(values[np.argsort(-counts, kind="stable")[:max_slices]].tolist())
        lumped = np.where(np.isin(groups.astype(str), list(keep)), groups.astype(str), OTHER)
        table = fidelity_by(state, lumped)
        rows: list[dict] = [{"value": str(v), "n_users": int(r.n_users), "share": _num(r.share, 4),
                             "fidelity": _num(r.fidelity), "teacher_mean": _num(r.teacher_mean, 4)}
                            for v, r in table.iterrows()]
        rows.sort(key=lambda r: (r["value"] == OTHER, -r["n_users"]))  # the lumped slice last
        out.append({"column": column, "fidelity_all": _num(table.attrs["fidelity_all"]), "min_users": MIN_SLICE,
                    "rows": rows})
    return out
