"""FrameCache shared by threads: the catalog's workers read and store frames at once."""

import threading

import numpy as np

import rudi_explain as rx
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
