"""``rx.load``: an explanation read back from the file :meth:`Explanation.save` wrote."""

from __future__ import annotations

from pathlib import Path

from rudi_explain.explanation import archive
from rudi_explain.explanation.explanation import Explanation

__all__ = ["load"]


def load(path: str | Path, *, max_bytes: int | None = None) -> Explanation:
    """Read an explanation written by :meth:`Explanation.save`.

    Files are treated as untrusted: only the entries the format names are
    read, each array's header is checked against the shape the JSON promises
    before its data is read, and the bytes read are bounded
    (:func:`rudi_explain.explanation.archive.read`).

    Parameters
    ----------
    path : str or Path
    max_bytes : int, optional
        The most bytes to decompress. By default 64 MiB plus 100 times the
        file's size on disk: far above what real explanations need, far below
        what a file padded with compressible junk would claim.

    Returns
    -------
    Explanation
        Finished; it holds no model (pass one to the audit methods that ask it).

    Raises
    ------
    ValueError
        Naming the path and the damaged entry or field: not an explanation
        file, another format version, wrong JSON types, array shapes or dtypes
        that differ from what the JSON promises, bad CRC, decreasing offsets,
        out-of-range category codes, repeated users, no held-out users.
    """
    saved = archive.read(path, max_bytes=max_bytes)
    return Explanation(saved.sequences, saved.params, result=saved.state, history=saved.history)

