"""Time and peak memory of ``rx.load`` on a normal file and on one padded with a huge all-zero entry.

An explanation file is shared between auditors, so ``load`` must not trust
it: the padded file carries an extra ``arrays/padding.npy`` of ``--zeros-gib``
GiB of zeros (a thousandfold deflate ratio), which ``load`` must ignore unread,
and a copy whose ``teacher_scores`` entry declares that many bytes, which
``load`` must refuse before reading.

    python benchmarks/bench_load.py [--users 20000] [--zeros-gib 1]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
import tracemalloc
import zipfile
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from tiny import tiny_payments  # noqa: E402

import rudi_explain as rx  # noqa: E402


def measure(path: Path) -> tuple[float, float, str]:
    """Seconds, peak traced MB and the outcome of one load."""
    tracemalloc.start()
    t = time.perf_counter()
    try:
        rx.load(path)
        outcome = "loaded"
    except ValueError as err:
        outcome = f"refused: {str(err)[:90]}..."
    seconds = time.perf_counter() - t
    peak = tracemalloc.get_traced_memory()[1] / 2**20
    tracemalloc.stop()
    return seconds, peak, outcome


def write_zeros(zf: zipfile.ZipFile, name: str, n_bytes: int) -> None:
    """An .npy entry of ``n_bytes`` zero bytes (float64), written in chunks."""
    n = n_bytes // 8
    header = {"descr": "<f8", "fortran_order": False, "shape": (n,)}
    with zf.open(name, "w", force_zip64=True) as f:
        np.lib.format.write_array_header_2_0(f, header)
        chunk = bytes(2**24)
        left = n * 8
        while left:
            f.write(chunk[: min(left, len(chunk))])
            left -= min(left, len(chunk))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--users", type=int, default=20_000)
    parser.add_argument("--zeros-gib", type=float, default=1.0)
    args = parser.parse_args()
    exp = tiny_payments(args.users)
    folder = Path(tempfile.mkdtemp(prefix="bench_load_"))
    normal = exp.save(folder / "normal.rudi")
    n_bytes = int(args.zeros_gib * 2**30)
    padded, inflated = folder / "padded.rudi", folder / "inflated.rudi"
    t = time.perf_counter()
    with zipfile.ZipFile(normal) as src, zipfile.ZipFile(padded, "w", zipfile.ZIP_DEFLATED) as a, \
            zipfile.ZipFile(inflated, "w", zipfile.ZIP_DEFLATED) as b:
        for name in src.namelist():
            a.writestr(name, src.read(name))
            if name != "arrays/teacher_scores.npy":
                b.writestr(name, src.read(name))
        write_zeros(a, "arrays/padding.npy", n_bytes)
        write_zeros(b, "arrays/teacher_scores.npy", n_bytes)
    print(f"{exp.sequences!r}; padded files written in {time.perf_counter() - t:.1f} s")
    print(f"{'file':<40} {'MB on disk':>10} {'seconds':>8} {'peak MB':>8}  outcome")
    for label, path in (("normal", normal), (f"+ {args.zeros_gib:g} GiB zero entry (unused)", padded),
                        (f"teacher_scores declaring {args.zeros_gib:g} GiB", inflated)):
        seconds, peak, outcome = measure(path)
        print(f"{label:<40} {path.stat().st_size / 2**20:>10.2f} {seconds:>8.3f} {peak:>8.1f}  {outcome}")
    for p in (normal, padded, inflated):
        p.unlink()
    folder.rmdir()


if __name__ == "__main__":
    main()
