"""replaced: a frozen record copied with some fields changed, as dataclasses.replace gives it."""

import dataclasses

import numpy as np
import pytest

import rudi_explain as rx
from rudi_explain.statistics.frame import EventFrame
from rudi_explain.statistics.grammar import PipelineState
from rudi_explain.statistics.records import replaced


def test_replaced_equals_dataclasses_replace_and_leaves_the_original():
    state = PipelineState(selected="amount", depth=2)
    for changes in ({}, {"depth": 3}, {"has_top": True, "group": "country"}):
        copy = replaced(state, **changes)
        assert copy == dataclasses.replace(state, **changes) and type(copy) is PipelineState
        assert state == PipelineState(selected="amount", depth=2)  # unchanged
    seqs = rx.datasets.make_payments(50, random_state=0).sequences()
    frame = EventFrame.of_all_users(seqs)
    keep = np.arange(len(frame)) % 2 == 0
    moved = replaced(frame, positions=np.flatnonzero(keep), segment=frame.segment[keep], layout_order=False)
    expected = dataclasses.replace(frame, positions=np.flatnonzero(keep), segment=frame.segment[keep],
                                   layout_order=False)
    for f in dataclasses.fields(EventFrame):
        a, b = getattr(moved, f.name), getattr(expected, f.name)
        assert np.array_equal(a, b) if isinstance(a, np.ndarray) or a is None else a == b or a is b
    assert frame.positions is None and frame.layout_order


def test_replaced_refuses_a_name_that_is_no_field():
    with pytest.raises(TypeError, match="no field 'dept'"):
        replaced(PipelineState(), dept=1)
    with pytest.raises(dataclasses.FrozenInstanceError):
        replaced(PipelineState(), depth=1).depth = 2  # type: ignore[misc]
