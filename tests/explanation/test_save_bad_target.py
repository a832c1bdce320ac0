"""Bad input, round three: ``save`` on a target it cannot write names the path, and leaves nothing."""

from __future__ import annotations

import errno
import os
import stat

import pytest
from tiny import tiny_payments

import rudi_explain as rx
from rudi_explain.exceptions import MissingFileError, WriteError


@pytest.fixture(scope="module")
def exp():
    return tiny_payments(60)


def test_save_into_a_missing_folder_names_the_folder(exp, tmp_path):
    target = tmp_path / "nope" / "exp.rudi"
    with pytest.raises(MissingFileError, match=rf"cannot save the explanation to {target}: the folder "
                                               rf"{target.parent} does not exist"):
        exp.save(target)
    assert list(tmp_path.iterdir()) == []


def test_save_onto_a_folder_or_a_device_names_it(exp, tmp_path):
    folder = tmp_path / "exp.rudi"
    folder.mkdir()
    with pytest.raises(WriteError, match=rf"cannot save the explanation to {folder}: it is a folder") as err:
        exp.save(folder)
    assert isinstance(err.value, OSError) and isinstance(err.value, rx.RudiExplainError)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["exp.rudi"]  # no .partial
    fifo = tmp_path / "pipe.rudi"
    os.mkfifo(fifo)
    with pytest.raises(WriteError, match=rf"{fifo}: it is not a regular file"):
        exp.save(fifo)
    assert stat.S_ISFIFO(fifo.stat().st_mode)  # left as it was


def test_a_failed_write_names_the_path_and_leaves_nothing(exp, tmp_path, monkeypatch):
    import zipfile

    def full(*args, **kwargs):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(zipfile.ZipFile, "writestr", full)
    target = tmp_path / "exp.rudi"
    with pytest.raises(WriteError, match=rf"cannot save the explanation to {target}: No space left on device"):
        exp.save(target)
    assert list(tmp_path.iterdir()) == []
