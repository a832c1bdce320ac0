"""load() against hostile and damaged files: bounded reads, clear errors naming the path and the field."""

from __future__ import annotations

import io
import json
import tracemalloc
import zipfile

import numpy as np
import pytest
from tiny import tiny_payments  # noqa: E402

import rudi_explain as rx


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    exp = tiny_payments(150)
    return exp, exp.save(tmp_path_factory.mktemp("load") / "good.rudi")


def rewrite(src, dst, replace=None, meta=None, extra=None, stored=False):
    """A copy of ``src`` with some entries replaced, the JSON edited, or entries added."""
    replace = replace or {}
    kind = zipfile.ZIP_STORED if stored else zipfile.ZIP_DEFLATED
    with zipfile.ZipFile(src) as a, zipfile.ZipFile(dst, "w", compression=kind) as b:
        for name in a.namelist():
            data = a.read(name)
            if name == "explanation.json" and meta is not None:
                m = json.loads(data)
                meta(m)
                data = json.dumps(m)
            b.writestr(name, replace.get(name, data))
        for name, data in (extra or {}).items():
            b.writestr(name, data)
    return dst


def npy(array) -> bytes:
    buf = io.BytesIO()
    np.save(buf, np.asarray(array), allow_pickle=False)
    return buf.getvalue()


def array_of(path, name):
    with zipfile.ZipFile(path) as zf:
        return np.load(io.BytesIO(zf.read(f"arrays/{name}.npy")))


def test_round_trip_still_loads(saved):
    exp, path = saved
    back = rx.load(path)
    assert str(back.rules) == str(exp.rules)
    np.testing.assert_array_equal(back.is_test, exp.is_test)
    np.testing.assert_array_equal(back.labels, exp.labels)


def test_an_extra_zero_entry_is_never_read(saved, tmp_path, monkeypatch):
    # 400 MB of zeros deflate to about 400 kB: the old load decompressed it.
    exp, path = saved
    zeros = np.zeros(50_000_000)
    bomb = tmp_path / "bomb.rudi"
    with zipfile.ZipFile(bomb, "w", compression=zipfile.ZIP_DEFLATED) as b, zipfile.ZipFile(path) as a:
        for name in a.namelist():
            b.writestr(name, a.read(name))
        with b.open("arrays/padding.npy", "w", force_zip64=True) as f:
            np.lib.format.write_array(f, zeros, allow_pickle=False)
    del zeros
    # Counted, not timed (benchmarks/bench_load.py prints the seconds): the entries load opens and
    # the bytes it decompresses from them.
    opened, decompressed = [], [0]
    real_open, real_read = zipfile.ZipFile.open, zipfile.ZipExtFile.read

    def counting_open(self, name, *args, **kwargs):
        opened.append(name.filename if isinstance(name, zipfile.ZipInfo) else name)
        return real_open(self, name, *args, **kwargs)

    def counting_read(self, n=-1):
        data = real_read(self, n)
        decompressed[0] += len(data)
        return data

    monkeypatch.setattr(zipfile.ZipFile, "open", counting_open)
    monkeypatch.setattr(zipfile.ZipExtFile, "read", counting_read)
    tracemalloc.start()
    back = rx.load(bomb)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    monkeypatch.undo()
    assert str(back.rules) == str(exp.rules)
    assert peak < 50e6, f"load peaked at {peak / 1e6:.0f} MB"
    assert "arrays/padding.npy" not in opened, opened
    with zipfile.ZipFile(path) as good:  # no more than the good file's entries hold, once each
        assert decompressed[0] <= sum(info.file_size for info in good.infolist()) + len(good.infolist())


def test_a_named_entry_declaring_more_than_promised_is_refused_before_reading(saved, tmp_path):
    exp, path = saved
    n = exp.sequences.n_users
    big = rewrite(path, tmp_path / "big.rudi", replace={"arrays/teacher_scores.npy": npy(np.zeros(20 * n))})
    tracemalloc.start()
    with pytest.raises(ValueError, match=r"big.rudi is damaged: array arrays/teacher_scores.npy .*promises \(150,\)"):
        rx.load(big)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert peak < 5e6


def test_the_bytes_read_are_bounded(saved, tmp_path):
    _, path = saved
    with pytest.raises(ValueError, match="max_bytes"):
        rx.load(path, max_bytes=10_000)
    assert rx.load(path, max_bytes=10**9).sequences.n_users == 150


def test_decreasing_offsets_are_refused(saved, tmp_path):
    exp, path = saved
    offsets = array_of(path, "seq_offsets").copy()
    offsets[5], offsets[6] = offsets[6], offsets[5] - 1
    bad = rewrite(path, tmp_path / "offsets.rudi", replace={"arrays/seq_offsets.npy": npy(offsets)})
    with pytest.raises(ValueError, match=r"offsets.rudi is damaged: .*seq_offsets.* never decrease"):
        rx.load(bad)


def test_out_of_range_codes_are_refused(saved, tmp_path):
    exp, path = saved
    codes = array_of(path, "seq_codes_0").copy()
    codes[3] = 99
    bad = rewrite(path, tmp_path / "codes.rudi", replace={"arrays/seq_codes_0.npy": npy(codes)})
    column = exp.sequences.categorical[0]
    with pytest.raises(ValueError, match=rf"codes.rudi is damaged: arrays/seq_codes_0.npy holds 99 at position 3: "
                                         rf"category codes of column '{column}' must be 0 \.\. "):
        rx.load(bad)


@pytest.mark.parametrize("edit, field", [
    (lambda m: m["sequences"].__setitem__("users", "u1"), "sequences.users"),
    (lambda m: m.__setitem__("seconds", {"total": "fast"}), "seconds.total"),
    (lambda m: m.__setitem__("history", [[1, 2]]), "history[0]"),
    (lambda m: m.__setitem__("statistics", [3]), "statistics[0]"),
    (lambda m: m.__setitem__("literals", []), "literals"),
    (lambda m: m["sequences"]["vocabularies"].__setitem__(m["sequences"]["categorical"][0], "abc"),
     "sequences.vocabularies"),
    (lambda m: m.__setitem__("rules", {"format": "rudi-explain/ruleset", "rules": 5, "intercept": 0}), "rules"),
    (lambda m: m["sequences"]["users"].__setitem__(0, [1]), "sequences.users"),
    (lambda m: m["sequences"].__setitem__("reference_time", 10**30), "saved sequences"),
])
def test_wrong_json_types_name_the_field(saved, tmp_path, edit, field):
    _, path = saved
    bad = rewrite(path, tmp_path / "types.rudi", meta=edit)
    with pytest.raises(ValueError, match=rf"types.rudi is damaged: .*{field.replace('[', '.').replace(']', '.')}"):
        rx.load(bad)


def test_bad_crc_names_the_path_and_entry(saved, tmp_path):
    _, path = saved
    stored = rewrite(path, tmp_path / "crc.rudi", stored=True)
    with zipfile.ZipFile(stored) as zf:
        info = zf.getinfo("arrays/teacher_scores.npy")
    raw = bytearray(stored.read_bytes())
    # Local header: 30 bytes, then the name and the extra field, then the data.
    name_len, extra_len = int.from_bytes(raw[info.header_offset + 26:info.header_offset + 28], "little"), \
        int.from_bytes(raw[info.header_offset + 28:info.header_offset + 30], "little")
    last = info.header_offset + 30 + name_len + extra_len + info.compress_size - 1
    raw[last] ^= 0xFF
    stored.write_bytes(bytes(raw))
    with pytest.raises(ValueError, match=r"crc.rudi is damaged: array arrays/teacher_scores.npy .*CRC"):
        rx.load(stored)


def test_repeated_users_are_refused(saved, tmp_path):
    _, path = saved
    bad = rewrite(path, tmp_path / "dup.rudi",
                  meta=lambda m: m["sequences"]["users"].__setitem__(1, m["sequences"]["users"][0]))
    with pytest.raises(ValueError, match=r"dup.rudi is damaged: .*repeats user ids 'u0+'"):
        rx.load(bad)


def test_an_empty_held_out_split_is_refused(saved, tmp_path):
    exp, path = saved
    bad = rewrite(path, tmp_path / "split.rudi",
                  replace={"arrays/is_test.npy": npy(np.zeros(exp.sequences.n_users, dtype=bool))})
    with pytest.raises(ValueError, match=r"split.rudi is damaged: .*is_test.npy holds out 0 of 150 users"):
        rx.load(bad)


def test_event_user_disagreeing_with_offsets_is_refused(saved, tmp_path):
    _, path = saved
    event_user = array_of(path, "seq_event_user").copy()
    event_user[0] = 7
    bad = rewrite(path, tmp_path / "eu.rudi", replace={"arrays/seq_event_user.npy": npy(event_user)})
    with pytest.raises(ValueError, match=r"eu.rudi is damaged: .*disagrees with the offsets"):
        rx.load(bad)


def test_object_arrays_are_refused_unread(saved, tmp_path):
    exp, path = saved
    buf = io.BytesIO()
    np.save(buf, np.array(["x"] * exp.sequences.n_users, dtype=object), allow_pickle=True)
    bad = rewrite(path, tmp_path / "obj.rudi", replace={"arrays/teacher_scores.npy": buf.getvalue()})
    with pytest.raises(ValueError, match=r"obj.rudi is damaged: array arrays/teacher_scores.npy .*dtype is object"):
        rx.load(bad)


# ------------------------------------------------------------------ the pruning path survives a round trip


@pytest.fixture(scope="module")
def pruned(tmp_path_factory):
    demo = rx.datasets.make_payments(400, random_state=5)
    exp = rx.explain(None, demo.events, scores=demo.risk, background=False, n_stats=3, n_rules=8,
                     n_simulations=20, student_params={"epochs": 15})
    assert exp.pruning is not None and len(exp.pruning.rule_sets) >= 2
    return exp, exp.save(tmp_path_factory.mktemp("pruned") / "pruned.rudi")


def test_fidelity_curve_and_every_point_survive_a_round_trip(pruned):
    exp, path = pruned
    back = rx.load(path)
    curve, again = exp.fidelity_curve, back.fidelity_curve
    assert list(again.columns) == list(curve.columns)
    for column in curve.columns:  # the same values, recomputed from the loaded rules and data
        np.testing.assert_array_equal(again[column].to_numpy(), curve[column].to_numpy())
    for k in curve["n_rules"]:
        a, b = exp.with_rules(int(k)), back.with_rules(int(k))
        assert [str(r) for r in b.rules] == [str(r) for r in a.rules]
        assert b.rules.intercept == a.rules.intercept
        np.testing.assert_array_equal(b.student_scores.to_numpy(), a.student_scores.to_numpy())
    r, s = exp.report(), back.report()
    assert (s["n_rules_unpruned"], s["fidelity_test_unpruned"]) == (r["n_rules_unpruned"], r["fidelity_test_unpruned"])


def test_a_file_without_the_pruning_field_loads_and_says_it_predates_it(pruned, tmp_path):
    exp, path = pruned
    old = rewrite(path, tmp_path / "old.rudi", meta=lambda m: m.pop("pruning"))
    back = rx.load(old)
    assert [str(r) for r in back.rules] == [str(r) for r in exp.rules]
    with pytest.raises(ValueError, match="old.rudi predates saved pruning paths"):
        _ = back.fidelity_curve
    with pytest.raises(ValueError, match="predates"):
        back.with_rules(2)


def test_an_unpruned_explanation_round_trips_without_a_curve(pruned, tmp_path):
    import dataclasses

    exp, _ = pruned
    unpruned = exp.with_result(dataclasses.replace(exp.result, pruning=None))
    back = rx.load(unpruned.save(tmp_path / "unpruned.rudi"))
    assert back.pruning is None
    with pytest.raises(ValueError, match="not pruned"):
        _ = back.fidelity_curve
@pytest.mark.parametrize("edit, field", [
    (lambda p: p.__setitem__("n_rules", ["many"]), "pruning.n_rules[0]"),
    (lambda p: p["rule_sets"][0]["rules"][0].__setitem__("weight", "heavy"), "pruning.rule_sets[0].rules[0].weight"),
    (lambda p: p.__setitem__("unpruned", []), "pruning.unpruned"),
    (lambda p: p.__setitem__("default", 1.5), "pruning.default"),
    (lambda p: p.__setitem__("default", 10**6), "pruning': the pruning path's default point"),
    (lambda p: p.__setitem__("fidelity_valid", p["fidelity_valid"][:-1]), "pruning': the pruning path has"),
    (lambda p: p["rule_sets"][0]["rules"][0].__setitem__("formula", {"lit": 10**6}), "pruning': a pruned rule"),
])
def test_damaged_pruning_fields_are_named(pruned, tmp_path, edit, field):
    _, path = pruned
    bad = rewrite(path, tmp_path / "pruning.rudi", meta=lambda m: edit(m["pruning"]))
    with pytest.raises(ValueError, match=rf"pruning.rudi is damaged: .*{field.replace('[', '.').replace(']', '.')}"):
        rx.load(bad)
