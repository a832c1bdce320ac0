"""Which events a statistic output reads, for a batch of users: one computation for every view of it.

The drill-down's highlighted rows, the events a fired rule reads in the attributions and the
events a counterfactual drops all come from :func:`output_events`.
"""

from __future__ import annotations

import numpy as np

from rudi_explain.data.sequences import Sequences
from rudi_explain.statistics.frame import EventFrame
from rudi_explain.statistics.operators import RowOperator
from rudi_explain.statistics.statistic import Statistic

__all__ = ["output_events"]


def output_events(seqs: Sequences, statistic: Statistic, user_indices: np.ndarray, output: int | str | None = None,
                  *, counted: bool) -> tuple[np.ndarray, np.ndarray]:
    """The events one output of ``statistic`` reads for each of ``user_indices``, in one pass over all of them.

    The statistic's row operators (``RetainBy``, ``FilterBy``, ``SortBy`` + ``Top``, ``Within``,
    ...) run on those users' events. For one output of a ``GroupBy`` statistic only the events of
    its group are kept.

    Parameters
    ----------
    seqs : Sequences
    statistic : Statistic
    user_indices : array of int
        Indices into ``seqs.users``.
    output : int, str or None
        The output's position within the statistic (``Literals.output_index``) or its exact name
        (never split apart: a category may itself hold ``", "`` or ``"="``); None for the events
        the row operators keep, whatever the output.
    counted : bool
        Which events of a categorical selection an output reads. True: only its category's, the
        events it counts ("share of payments at gambling merchants" counts the gambling payments).
        False: every event the row operators keep, the share's denominator too. An aggregation
        that ignores the selection (``Count``) reads them all either way.

    Returns
    -------
    positions : ndarray of int64
        The events' positions in ``seqs`` (in the order the row operators leave them).
    segment : ndarray of int64
        For each, which of ``user_indices`` (its position there) it belongs to.
    """
    frame = EventFrame.batch(seqs, np.asarray(user_indices, dtype=np.int64))
    for op in statistic.operators[1:-1]:
        if isinstance(op, RowOperator):
            frame = op.apply(frame)
    kept, seg = np.asarray(frame.positions, dtype=np.int64), frame.segment.astype(np.int64)
    if output is None:
        return kept, seg
    group = statistic.group
    by_category = counted and statistic.selected in seqs.codes and not statistic.aggregation.ignores_selection
    if group is None and not by_category:
        return kept, seg
    k = statistic.output_names(seqs).index(output) if isinstance(output, str) else int(output)
    q = len(seqs.vocabularies[group]) if group is not None else 1
    if group is not None and q and statistic.n_outputs(seqs) % q == 0:
        # Outputs run selected category first, then group category: k = s * q + g.
        keep = seqs.codes[group][kept] == k % q
        kept, seg = kept[keep], seg[keep]
    if by_category:
        keep = seqs.codes[statistic.selected][kept] == k // q
        kept, seg = kept[keep], seg[keep]
    return kept, seg
