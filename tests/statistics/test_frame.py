"""Event frames: the FrameCache shared by threads (the catalog's workers read and store frames at once), and the
within-user orders the sorts read."""

import threading

import numpy as np

import rudi_explain as rx
from rudi_explain.statistics import frame as frame_module
from rudi_explain.statistics.frame import EventFrame, FrameCache


def test_a_frame_cache_shared_by_threads_stays_within_its_budget_and_gives_the_stored_frames():
    demo = rx.datasets.make_payments(200, random_state=0)
    seqs = demo.sequences()
    base = EventFrame.of_all_users(seqs)
    rng = np.random.default_rng(0)
    frames = {k: base.keep(rng.random(seqs.n_events) < 0.5) for k in range(24)}
    size = max(f.positions.nbytes + f.segment.nbytes for f in frames.values())
    cache = FrameCache(seqs, max_bytes=5 * size)  # room for a few: the threads evict each other's frames
    errors = []

    def work(seed):
        local = np.random.default_rng(seed)
        try:
            for _ in range(400):
                key = int(local.integers(24))
                if local.random() < 0.5:
                    cache.put(key, frames[key])
                else:
                    hit = cache.get(key)
                    assert hit is None or hit is frames[key]
        except Exception as error:  # reported below: an exception in a thread fails nothing
            errors.append(error)

    threads = [threading.Thread(target=work, args=(seed,)) for seed in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    held = [cache.get(k) for k in range(24)]
    assert 1 <= len(cache) <= 5 and sum(h is not None for h in held) == len(cache)
    assert cache._bytes == sum(f.positions.nbytes + f.segment.nbytes for f in held if f is not None) <= cache.max_bytes


def _sorted_within(seqs, positions, segment, n_segments, column, descending, absolute):
    """Each segment's events of ``positions`` sorted by the column (NaN last, ties in layout order),
    segments in order: a plain loop over the segments."""
    out = []
    for b in range(n_segments):
        mine = [int(p) for p, s in zip(positions, segment) if s == b]
        values = {p: float(seqs.values[column][p]) for p in mine}
        if absolute:
            values = {p: abs(v) for p, v in values.items()}

        def key(p, values=values):
            v = values[p]
            return (np.isnan(v), 0.0 if np.isnan(v) else (-v if descending else v), p)

        out.extend(sorted(mine, key=key))
    return np.array(out, dtype=np.int64)


def _reference_order(seqs, positions, column, descending, absolute):
    """A frame over all users: each user's events sorted, users in order."""
    return _sorted_within(seqs, positions, seqs.event_user[positions], seqs.n_users, column, descending, absolute)


def test_a_filtered_frame_sorted_over_all_users_gives_each_users_events_in_order():
    # The whole per-column permutation, filtered, against a plain per-user sort (NaN last, ties in
    # layout order); asked twice, the cached permutation gives the same. Shares under 1/16 of the
    # events take the other path (their places in the whole order, sorted); none left gives none.
    demo = rx.datasets.make_payments(60, random_state=3)
    seqs = demo.sequences()
    column = next(iter(seqs.values))
    seqs.values[column][::7] = np.nan  # undefined values sort last
    seqs.values[column][1::5] = np.round(seqs.values[column][1::5])  # ties keep layout order
    base = EventFrame.of_all_users(seqs)
    rng = np.random.default_rng(1)
    for descending in (False, True):
        for absolute in (False, True):
            for share in (0.0, 0.03, 0.2, 0.7):
                frame = base.keep(rng.random(seqs.n_events) < share)
                expected = _reference_order(seqs, frame.positions, column, descending, absolute)
                for _ in range(2):
                    got = frame.sorted_by(column, descending, absolute)
                    assert np.array_equal(got.positions, expected)
                    assert np.array_equal(got.segment, seqs.event_user[expected])
                    assert not got.layout_order and got.all_users


def _reference_batch_order(seqs, frame, column, descending, absolute):
    """A batch: each segment's events sorted, segments in order."""
    return _sorted_within(seqs, frame.positions, frame.segment, frame.n_segments, column, descending, absolute)


def test_a_batch_sorted_gives_each_segments_events_in_order_before_and_after_the_whole_order_is_made():
    # A batch (users in any order, one of them twice, some events filtered out) sorted by a lexsort of
    # its values at first, then, once the batches sorted add up to the layout's events, through the
    # whole order made once (each event's place in it, sorted within its segment): the same order
    # as a plain per-segment sort either way, and the same segments.
    demo = rx.datasets.make_payments(80, random_state=4)
    seqs = demo.sequences()
    column = next(iter(seqs.values))
    seqs.values[column][::6] = np.nan
    seqs.values[column][1::4] = np.round(seqs.values[column][1::4])
    rng = np.random.default_rng(2)
    for descending in (False, True):
        for absolute in (False, True):
            key = ("within_user_order", column, descending, absolute)
            paths = set()
            for _ in range(12):
                users = rng.choice(seqs.n_users, size=20, replace=False)
                users[-1] = users[0]  # one user in two segments
                frame = EventFrame.batch(seqs, users)
                frame = frame.keep(rng.random(len(frame)) < 0.8)
                paths.add(key in seqs._cache)
                got = frame.sorted_by(column, descending, absolute)
                assert np.array_equal(got.positions, _reference_batch_order(seqs, frame, column, descending, absolute))
                assert np.array_equal(got.segment, frame.segment) and not got.layout_order
            assert paths == {False, True}  # both ways were taken


def test_statistics_sharing_a_frame_cache_give_the_values_each_gives_alone():
    # The frames of shared row operators, the sorted frames of the percentiles and the columns
    # gathered for a frame (FrameCache.column) are reused across statistics: each statistic's values
    # equal those it gives evaluated alone, with a roomy cache and with one so small it evicts.
    demo = rx.datasets.make_payments(300, random_state=5)
    seqs = demo.sequences()
    texts = []
    for head in ("", "RetainBy(channel=online) | ", "FilterBy(country=home) | ",
                 "RetainBy(channel=online) | SortBy(amount, desc) | Top(5) | "):
        for agg in ("Mean", "Max", "Min", "Sum", "Std", "Percentile(10)", "Percentile(50)", "Percentile(90)", "First"):
            texts += [f"Select(amount) | {head}{agg}", f"Select(amount) | {head}Abs | {agg}",
                      f"Select(merchant_category) | {head}{agg}", f"Select(amount) | {head}GroupBy(card_type) | {agg}"]
        texts.append(f"Select(*) | {head}Count")
    stats = []
    for text in texts:
        try:
            stats.append(rx.Statistic.parse(text).validate(seqs))
        except rx.exceptions.InputError:
            pass  # not a valid statistic here (e.g. an order no aggregation uses)
    assert len(stats) > 80
    alone = [s.evaluate(seqs) for s in stats]
    for budget in (192 * 2**20, 4_000):
        frames = FrameCache(seqs, max_bytes=budget)
        for _ in range(2):  # the second pass reads what the first stored
            for s, expected in zip(stats, alone):
                np.testing.assert_array_equal(s.evaluate(seqs, frames=frames), expected, err_msg=str(s))
        assert frames._bytes <= budget


def test_statistics_on_batches_give_the_rows_of_all_users_before_and_after_the_whole_orders_are_made():
    # A batch's order statistics (percentiles, SortBy then Top) come from a lexsort of its values
    # at first and through the whole order once the batches add up to the layout's events: the
    # rows of the same users evaluated all together either way.
    demo = rx.datasets.make_payments(200, random_state=6)
    seqs = demo.sequences()
    texts = ["Select(amount) | Percentile(90)", "Select(amount) | Abs | Percentile(25)",
             "Select(amount) | RetainBy(channel=online) | Percentile(50)",
             "Select(hour) | SortBy(amount, desc) | Top(5) | Mean", "Select(amount) | SortBy(hour) | First"]
    stats = [rx.Statistic.parse(t).validate(seqs) for t in texts]
    whole = [s.evaluate(demo.sequences()) for s in stats]  # on another layout: its orders not shared
    rng = np.random.default_rng(3)
    made = []
    for _ in range(8):
        users = rng.choice(seqs.n_users, size=60, replace=True)  # any order, repeats
        made.append(("within_user_order", "amount", False, False) in seqs._cache)
        for s, expected in zip(stats, whole):
            np.testing.assert_array_equal(s.evaluate(seqs, users), expected[users], err_msg=str(s))
    assert made[0] is False and made[-1] is True  # first by lexsorts, then through the whole order


def test_every_user_is_sorted_by_value_through_the_whole_order_of_a_sample():
    # through Sequences (a sample's layout, as the search and the literals sort it), against a per-user loop
    demo = rx.datasets.make_payments(400, random_state=0)
    seqs = demo.sequences().subset(np.arange(0, 400, 3))
    order = frame_module._within_user_order(seqs, "amount", True, False)
    amount = seqs.values["amount"]
    for u in range(seqs.n_users):
        start, end = seqs.offsets[u], seqs.offsets[u + 1]
        mine = order[start:end]
        assert sorted(mine.tolist()) == list(range(start, end))  # each user's own events, in its own places
        ranked = sorted(range(start, end), key=lambda i: (np.isnan(amount[i]), -amount[i] if amount[i] == amount[i]
                                                           else 0.0, i))
        assert mine.tolist() == ranked
