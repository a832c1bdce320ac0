"""Time and peak memory of ``rx.load`` on a normal file and on one padded with a huge all-zero entry.

An explanation file is shared between auditors, so ``load`` must not trust
it: the padded file carries an extra ``arrays/padding.npy`` of ``--zeros-gib``
GiB of zeros (a thousandfold deflate ratio), which ``load`` must ignore unread,
and a copy whose ``teacher_scores`` entry declares that many bytes, which
``load`` must refuse before reading. A third file holds one statistic text of
``--abs-ops`` repeated ``| Abs`` operators (about 1000:1 under deflate), which
``load`` must refuse by its length before building a single operator: in under
1 s and 100 MB.

    python benchmarks/bench_load.py [--users 20000] [--zeros-gib 1] [--abs-ops 200000]
"""

from __future__ import annotations

import argparse
import json
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
    parser.add_argument("--abs-ops", type=int, default=200_000, help="'| Abs' operators in the huge statistic")
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
    huge = folder / "huge_statistic.rudi"
    with zipfile.ZipFile(normal) as src, zipfile.ZipFile(huge, "w", zipfile.ZIP_DEFLATED) as c:
        for name in src.namelist():
            data = src.read(name)
            if name == "explanation.json":
                meta = json.loads(data)
                meta["statistics"][0] = "Select(amount)" + " | Abs" * args.abs_ops + " | Mean"
                data = json.dumps(meta).encode()
            c.writestr(name, data)
    print(f"{exp.sequences!r}; padded files written in {time.perf_counter() - t:.1f} s")
    print(f"{'file':<40} {'MB on disk':>10} {'seconds':>8} {'peak MB':>8}  outcome")
    for label, path in (("normal", normal), (f"+ {args.zeros_gib:g} GiB zero entry (unused)", padded),
                        (f"teacher_scores declaring {args.zeros_gib:g} GiB", inflated),
                        (f"one statistic of {args.abs_ops:,} '| Abs'", huge)):
        seconds, peak, outcome = measure(path)
        print(f"{label:<40} {path.stat().st_size / 2**20:>10.2f} {seconds:>8.3f} {peak:>8.1f}  {outcome}")
        if path == huge:
            ok = outcome.startswith("refused") and seconds < 1.0 and peak < 100
            verdict = "refused in under 1 s and 100 MB" if ok else "NOT refused in 1 s and 100 MB"
            print(f"  the huge statistic is {verdict} ({seconds:.3f} s, {peak:.1f} MB traced)")
    for p in (normal, padded, inflated, huge):
        p.unlink()
    folder.rmdir()


if __name__ == "__main__":
    main()
