"""Bounded reading of explanation files: named entries only, sizes checked before reading.

Explanation files travel between people, so :func:`rudi_explain.load` treats
them as hostile. A zip entry can claim any size and a run of zeros deflates a
thousandfold, so nothing here trusts an entry before checking it:

* only the entries the format names are opened; any other entry is ignored
  unread;
* the declared (uncompressed) sizes of those entries are added up from the
  zip directory and refused above a budget *before* any is decompressed;
* each ``.npy`` header is read first (a few hundred bytes) and its dtype and
  shape compared with what the JSON promises; only then is the data read,
  exactly the bytes that shape needs, and the entry's CRC checked.

Nothing is unpickled: object dtypes are refused from the header.
"""

from __future__ import annotations

import zipfile
import zlib
from pathlib import Path
from typing import Any

import numpy as np

from rudi_explain.exceptions import InputError

__all__ = ["ArchiveReader", "default_budget"]

#: Largest ``.npy`` header accepted (numpy's own default limit).
_MAX_HEADER = 10_000
#: Bytes every file may expand to, on top of the ratio below.
_BASE_BUDGET = 64 * 2**20
#: How many times its size on disk a file may expand to. The arrays of a real
#: explanation (float scores and values, a permutation of input rows) deflate
#: a few times at most; a 1000:1 ratio is the signature of padding.
_RATIO = 100


def default_budget(path: Path) -> int:
    """The default bound on the bytes :func:`rudi_explain.load` decompresses from ``path``."""
    return _BASE_BUDGET + _RATIO * path.stat().st_size


class ArchiveReader:
    """Reads named entries of an open zip within a byte budget.

    Parameters
    ----------
    zf : zipfile.ZipFile
    path : Path
        For messages.
    budget : int
        The most uncompressed bytes all reads together may produce.
    """

    def __init__(self, zf: zipfile.ZipFile, path: Path, budget: int) -> None:
        self.zf = zf
        self.path = path
        self.budget = budget
        self.used = 0

    def info(self, name: str) -> zipfile.ZipInfo | None:
        """The directory entry of ``name``, or None when the file lacks it."""
        try:
            return self.zf.getinfo(name)
        except KeyError:
            return None

    def check_declared(self, names: list[str]) -> None:
        """Refuse before reading when the named entries declare more bytes than the budget."""
        declared = sum(i.file_size for i in map(self.info, names) if i is not None)
        if declared > self.budget:
            raise InputError(
                f"{self.path}: its entries would expand to {declared:,} bytes, more than the "
                f"{self.budget:,} allowed for a file of its size; if you trust it, pass "
                f"max_bytes={declared} to load()"
            )

    def _spend(self, n: int, name: str) -> None:
        if self.used + n > self.budget:
            raise InputError(
                f"{self.path}: reading {name} would exceed the {self.budget:,} bytes allowed "
                "(pass a larger max_bytes to load() if you trust the file)"
            )
        self.used += n

    def read_bytes(self, name: str) -> bytes:
        """All bytes of a small entry (the JSON), within the budget."""
        info = self.info(name)
        if info is None:
            raise KeyError(name)
        self._spend(info.file_size, name)
        try:
            with self.zf.open(info) as fp:
                data = fp.read(info.file_size + 1)
        except (zipfile.BadZipFile, zlib.error, EOFError, OSError, NotImplementedError) as err:
            raise InputError(f"{self.path}: entry {name} is damaged ({err})") from None
        if len(data) != info.file_size:
            raise InputError(f"{self.path}: entry {name} is damaged (its size differs from the declared one)")
        return data

    def read_array(self, name: str, kinds: str, shape: tuple[int | None, ...],
                   what: str) -> np.ndarray:
        """A ``.npy`` entry, checked against the dtype kinds and shape promised.

        Parameters
        ----------
        name : str
            Entry name inside the zip.
        kinds : str
            Accepted dtype kinds (``'f'``, ``'i'``, ``'b'``, ...).
        shape : tuple
            The expected shape; ``None`` in a place accepts any length there.
        what : str
            What the array is, for messages.
        """
        info = self.info(name)
        if info is None:
            raise InputError(f"{self.path} is damaged: it lacks {name} ({what})")
        try:
            with self.zf.open(info) as fp:
                version = np.lib.format.read_magic(fp)
                if version == (1, 0):
                    header = np.lib.format.read_array_header_1_0(fp, max_header_size=_MAX_HEADER)
                elif version in ((2, 0), (3, 0)):
                    header = np.lib.format.read_array_header_2_0(fp, max_header_size=_MAX_HEADER)
                else:
                    raise InputError(f"unknown .npy version {version}")
                array_shape, fortran, dtype = header
                if dtype.hasobject or dtype.kind not in kinds:
                    raise InputError(f"its dtype is {dtype}, expected kind {kinds!r}")
                if len(array_shape) != len(shape) or any(
                        want is not None and got != want for got, want in zip(array_shape, shape)):
                    promised = tuple("any" if s is None else s for s in shape)
                    raise InputError(f"its header declares shape {array_shape}, the file's JSON promises {promised}")
                nbytes = int(np.prod(array_shape, dtype=np.int64)) * dtype.itemsize
                start = fp.tell()
                if info.file_size != start + nbytes:
                    raise InputError(f"the entry declares {info.file_size:,} bytes, its shape needs "
                                     f"{start + nbytes:,}")
                self._spend(nbytes, name)
                data = fp.read(nbytes)
                # Reading past the end makes zipfile check the CRC.
                if len(data) != nbytes or fp.read(1):
                    raise InputError("its data is truncated")
        except ValueError as err:
            raise InputError(f"{self.path} is damaged: array {name} ({what}): {err}") from None
        except (zipfile.BadZipFile, zlib.error, EOFError, OSError, NotImplementedError) as err:
            raise InputError(f"{self.path} is damaged: array {name} ({what}): {err}") from None
        array = np.frombuffer(data, dtype=dtype)
        array = array.reshape(array_shape, order="F" if fortran else "C")
        return np.ascontiguousarray(array.astype(dtype.newbyteorder("="), copy=True))


def expect(value: Any, types: type | tuple[type, ...], field: str, path: Path) -> Any:
    """``value`` when it has one of ``types``; a ValueError naming the field otherwise."""
    if isinstance(value, bool) and bool not in (types if isinstance(types, tuple) else (types,)):
        ok = False
    else:
        ok = isinstance(value, types)
    if not ok:
        names = " or ".join(t.__name__ for t in (types if isinstance(types, tuple) else (types,)))
        raise InputError(f"{path} is damaged: field {field!r} should be {names}, got {type(value).__name__}")
    return value
