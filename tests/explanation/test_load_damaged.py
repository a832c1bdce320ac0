"""load() refuses damaged event arrays (codes, times) naming the entry and the position."""

from __future__ import annotations

import io
import zipfile

import numpy as np
import pytest
from tiny import tiny_payments  # noqa: E402

import rudi_explain as rx


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    exp = tiny_payments(150)
    return exp, exp.save(tmp_path_factory.mktemp("damaged") / "good.rudi")


def rewrite(src, dst, replace):
    with zipfile.ZipFile(src) as a, zipfile.ZipFile(dst, "w", compression=zipfile.ZIP_DEFLATED) as b:
        for name in a.namelist():
            b.writestr(name, replace.get(name, a.read(name)))
    return dst


def npy(array) -> bytes:
    buf = io.BytesIO()
    np.save(buf, np.asarray(array), allow_pickle=False)
    return buf.getvalue()


def array_of(path, name):
    with zipfile.ZipFile(path) as zf:
        return np.load(io.BytesIO(zf.read(f"arrays/{name}.npy")))


def test_the_good_file_loads(saved):
    exp, path = saved
    assert rx.load(path).sequences.n_users == exp.sequences.n_users


def test_a_code_of_minus_one_is_refused_naming_the_entry(saved, tmp_path):
    exp, path = saved
    codes = array_of(path, "seq_codes_0").copy()
    codes[17] = -1
    bad = rewrite(path, tmp_path / "codes.rudi", {"arrays/seq_codes_0.npy": npy(codes)})
    size = len(exp.sequences.vocabularies[exp.sequences.categorical[0]])
    with pytest.raises(ValueError, match=rf"codes.rudi is damaged: arrays/seq_codes_0.npy holds -1 at position 17: "
                                         rf"category codes of column .* must be 0 \.\. {size - 1}"):
        rx.load(bad)


def _times_entry(path):
    times = array_of(path, "seq_times").copy()
    return times


def test_a_missing_event_time_is_refused_naming_the_entry(saved, tmp_path):
    _, path = saved
    times = _times_entry(path)
    if times.dtype.kind == "f":
        times[5] = np.nan
    else:
        times[5] = np.iinfo(np.int64).min  # NaT
    bad = rewrite(path, tmp_path / "nan.rudi", {"arrays/seq_times.npy": npy(times)})
    with pytest.raises(ValueError, match=r"nan.rudi is damaged: arrays/seq_times.npy holds a missing .* position 5"):
        rx.load(bad)


def test_times_out_of_order_are_refused_naming_the_entry(saved, tmp_path):
    exp, path = saved
    offsets = array_of(path, "seq_offsets")
    times = _times_entry(path)
    sizes = np.diff(offsets)
    user = int(np.flatnonzero(sizes >= 3)[0])
    first, last = int(offsets[user]), int(offsets[user + 1]) - 1
    times[first], times[last] = times[last], times[first]  # the user's last event now comes first
    assert times[first] > times[first + 1]
    bad = rewrite(path, tmp_path / "order.rudi", {"arrays/seq_times.npy": npy(times)})
    with pytest.raises(ValueError, match=rf"order.rudi is damaged: arrays/seq_times.npy is out of order at position "
                                         rf"{first + 1} \(user .*\): each user's event times must never decrease"):
        rx.load(bad)


def test_times_dropping_from_one_user_to_the_next_are_fine(saved):
    _, path = saved
    offsets, times = array_of(path, "seq_offsets"), _times_entry(path)
    starts = offsets[1:-1]
    starts = starts[(starts > 0) & (starts < len(times))]
    assert (times[starts] < times[starts - 1]).any()  # the good file has such drops, and it loads
    rx.load(path)


@pytest.mark.parametrize("bad", ["x", 2.5, True, -1, 0])
def test_max_bytes_that_is_not_a_whole_number_is_named(saved, bad):
    _, path = saved
    with pytest.raises((rx.exceptions.InputError, rx.exceptions.InputTypeError), match=r"max_bytes must be a whole"):
        rx.load(path, max_bytes=bad)
