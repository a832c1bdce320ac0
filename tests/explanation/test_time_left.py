"""The job's own estimate of its time left (issue 27, item 2): counted work on a fake clock."""

from rudi_explain.explanation import eta
from rudi_explain.explanation.eta import TimeLeft

GAINS = [0.4, 0.1, 0.025, 0.00625]  # falling by 4 a statistic: the next (0.0016) is under min_gain


def _job(speed=2.0, users=5000, n_catalog=1000):
    """A job's events with the seconds each piece of work takes at this machine's ``speed``:
    (stage, step, total, numbers, elapsed). The search keeps 4 of n_stats=20, then runs MCTS-SG."""
    t, out = 0.0, []
    out.append(("teacher", 0, 1, {"users": users}, t))
    out.append(("teacher", 1, 1, {}, t))
    cost = eta.CATALOG_UNIT * min(eta.SAMPLE_USERS, users * 0.8) * speed
    base = {"found": [], "min_gain": 0.002, "reward": 0.0}
    for done in range(0, n_catalog, 50):
        out.append(("search", 0, 20, {**base, "phase": "catalog", "phase_done": done, "phase_total": n_catalog},
                    t + done * cost))
    t += n_catalog * cost
    catalog = n_catalog * cost
    per_stat = eta.SELECT_PER_CATALOG * catalog / 4.5
    found: list[str] = []
    out.append(("search", 0, 20, {**base, "phase": "select"}, t))
    for k, gain in enumerate(GAINS):
        t += per_stat
        found = found + [f"s{k}"]
        out.append(("search", k + 1, 20, {**base, "phase": "select", "found": found, "reward": gain}, t))
    mcts = eta.MCTS_PER_CATALOG * catalog
    for i in range(10):
        out.append(("search", 4, 20, {**base, "phase": "mcts", "found": found, "reward": GAINS[-1]}, t + i * mcts / 10))
    t += mcts + 0.5 * per_stat
    out.append(("search", 20, 20, {**base, "phase": "select", "found": found, "reward": GAINS[-1]}, t))
    # literals, student and post-processing: the work on every user, and the work on at most CAPPED_USERS
    later = (eta.LATER_PER_USER_STAT * users + eta.LATER_PER_CAPPED_USER_STAT * min(users, eta.CAPPED_USERS)) \
        * len(found) * speed
    student = later / (1 + eta.PRUNE_PER_STUDENT)
    for e in range(21):
        out.append(("student", e, 20, {}, t + student * e / 20))
    t += student
    out.append(("evaluate", 0, 1, {}, t))
    t += eta.PRUNE_PER_STUDENT * student
    out.append(("done", 1, 1, {}, t))
    return out


def test_seconds_left_falls_to_zero_near_the_real_end():
    for speed, users in [(1.0, 5000), (2.0, 5000), (3.0, 100_000)]:
        events = _job(speed, users)
        end = events[-1][-1]
        left = TimeLeft()
        estimates = [(e, left.update(stage, step, total, numbers, e)) for stage, step, total, numbers, e in events]
        assert estimates[-1][1] == 0.0
        told = [(e, s) for e, s in estimates if s is not None]
        assert told[0][0] < 0.1 * end  # from the catalog's first pace on
        for (_, s0), (e1, s1) in zip(told, told[1:]):
            assert s1 <= s0 + 0.05 * end, (speed, e1, s0, s1)  # it falls (within 5% of the job)
        for e, s in told:
            if e >= 0.2 * end:
                assert abs(e + s - end) <= 0.3 * end, (speed, users, e, s, end)


def test_statistics_left_follow_the_stopping_rule_not_n_stats():
    left = TimeLeft()
    assert left.expected_statistics(20, 0.002) == eta.TYPICAL_STATS  # nothing known yet: a typical search
    kept = []
    for k, gain in enumerate(GAINS):
        kept.append(f"s{k}")
        left.update("search", k + 1, 20, {"phase": "select", "found": kept, "reward": gain, "min_gain": 0.002}, k)
        # what the search will still keep: those of the falling gains at least min_gain, never 20 - k
        want = eta.TYPICAL_STATS - 1 if k == 0 else len(GAINS) - k - 1  # one gain: no fall known yet
        assert left.expected_statistics(20, 0.002) == want
    assert left.expected_statistics(20, 0.00625) == 0  # the last one was the last at least min_gain
    left.gains = [0.3, 0.29]  # slowly falling gains: bounded by the statistics still allowed
    assert left.expected_statistics(20, 0.002) == 20 - len(kept)
    assert left.expected_statistics(20, 0.5) == 0


def test_later_stages_grow_with_users_less_than_in_proportion_beyond_the_students_cap():
    def later(users: int) -> float:
        left = TimeLeft()
        left.users = users
        return left._later(4)

    small = eta.CAPPED_USERS // 4
    # below the cap every part grows with the users: in proportion
    assert abs(later(2 * small) / later(small) - 2.0) < 1e-9
    # beyond it the student's epochs and the post-processing's choices stop growing: four times the users
    # cost more, but less than four times as much
    big = 4 * eta.CAPPED_USERS
    assert later(big) < 4 * later(eta.CAPPED_USERS)
    assert later(big) - later(2 * eta.CAPPED_USERS) == \
        eta.LATER_PER_USER_STAT * 2 * eta.CAPPED_USERS * 4 * TimeLeft().speed
