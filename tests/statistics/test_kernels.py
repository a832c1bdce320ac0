"""Segment reductions against a per-event reference loop."""

import numpy as np
import pytest

from rudi_explain.statistics.kernels import onehot_counts


def _reference(codes, keys, n_keys, n_categories):
    n = np.zeros(n_keys)
    c = np.zeros((n_keys, n_categories))
    for code, key in zip(codes.tolist(), keys.tolist()):
        n[key] += 1  # every event, an unseen category (code -1) included
        if code >= 0:
            c[key, code] += 1
    return n, c


@pytest.mark.parametrize("unseen", [0.0, 0.2])
def test_onehot_counts_match_a_per_event_loop(unseen):
    rng = np.random.default_rng(0)
    for _ in range(30):
        n_keys, n_categories = int(rng.integers(1, 40)), int(rng.integers(1, 12))
        size = int(rng.integers(0, 400))
        keys = np.sort(rng.integers(0, n_keys, size)).astype(rng.choice([np.int32, np.int64]))
        codes = rng.integers(0, n_categories, size).astype(np.int32)
        codes[rng.random(size) < unseen] = -1
        n, c = onehot_counts(codes, keys, n_keys, n_categories)
        ref_n, ref_c = _reference(codes, keys, n_keys, n_categories)
        assert n.dtype == c.dtype == np.float64 and n.shape == (n_keys,) and c.shape == (n_keys, n_categories)
        np.testing.assert_array_equal(n, ref_n)
        np.testing.assert_array_equal(c, ref_c)
