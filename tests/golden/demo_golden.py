"""What ``make demo`` leaves behind at seed 0, reduced to what must not change when code moves.

``python tests/golden/demo_golden.py write`` runs ``rudi-explain demo`` and stores the result in
``tests/golden/demo.json``; ``test_golden.py`` runs it again and compares. Timings are dropped
(they differ run to run); everything else (the printed text, the rules, the report's figures,
the saved explanation's JSON and a digest of each saved array) must be identical.

The demo runs in a child process whose numpy, OpenBLAS and PyTorch kernels are held to AVX2
(:data:`PINNED`): each picks its kernels by the CPU, and on a CPU with AVX-512 they round some
sums in another order, which flipped a near-tie in the GRU demo's scorecard choice (the record
was taken on an AVX2 machine; on an AVX-512 one the demo printed another scorecard). Held to
AVX2, the record holds on any x86-64 CPU with AVX2 (seen: an AVX-512 AMD EPYC reproduces the
AVX2 machine's record byte for byte).
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import re
import subprocess
import sys
import zipfile
from contextlib import redirect_stdout
from pathlib import Path

import numpy as np

HERE = Path(__file__).parent
GOLDEN = HERE / "demo.json"
#: seconds, and figures derived from wall-clock time, in the demo's printed text
_TIMES = re.compile(r"\d+(\.\d+)? s\b|in \d+(\.\d+)? s|Seconds: .*")


def _without_times(meta: dict) -> dict:
    meta = dict(meta)
    meta.pop("seconds", None)
    meta["history"] = [{k: _TIMES.sub("<time>", v) if k == "message" else v for k, v in e.items() if k != "elapsed"}
                       for e in meta.get("history", [])]
    return meta


#: the kernels each library may pick, held to AVX2 (x86-64-v3) before any of them loads
PINNED = {"NPY_DISABLE_CPU_FEATURES": "X86_V4 AVX512_ICL AVX512_SPR", "OPENBLAS_CORETYPE": "Haswell",
          "ATEN_CPU_CAPABILITY": "avx2", "ONEDNN_MAX_CPU_ISA": "AVX2"}


def run_demo_pinned(out: Path) -> dict:
    """:func:`run_demo` in a child process with the :data:`PINNED` kernels."""
    record = out.parent / "record.json"
    done = subprocess.run([sys.executable, __file__, "record", str(out), str(record)],
                          env={**os.environ, **PINNED}, capture_output=True, text=True)
    if done.returncode:
        raise RuntimeError(f"the demo failed in its child process:\n{done.stdout[-4000:]}\n{done.stderr[-4000:]}")
    return json.loads(record.read_text())


def run_demo(out: Path) -> dict:
    """Run the demo into ``out`` and return its golden record."""
    from rudi_explain.cli import main

    buffer = io.StringIO()
    with redirect_stdout(buffer):
        main(["demo", "--out", str(out)])
    text = _TIMES.sub("<time>", buffer.getvalue().replace(str(out), "<out>"))
    report = json.loads((out / "report.json").read_text())
    report.pop("seconds", None)
    with zipfile.ZipFile(out / "explanation.rudi") as zf:
        meta = _without_times(json.loads(zf.read("explanation.json")))
        arrays = {}
        for name in sorted(zf.namelist()):
            if name.endswith(".npy"):
                array = np.load(io.BytesIO(zf.read(name)), allow_pickle=False)
                arrays[name] = f"{array.dtype}{list(array.shape)}:{hashlib.sha256(array.tobytes()).hexdigest()}"
    return {"printed": text.splitlines(), "rules": (out / "rules.txt").read_text().splitlines(),
            "report": report, "explanation": meta, "arrays": arrays}


if __name__ == "__main__":
    import tempfile

    if sys.argv[1:2] == ["record"] and len(sys.argv) == 4:  # the child process of run_demo_pinned
        Path(sys.argv[3]).write_text(json.dumps(run_demo(Path(sys.argv[2])), sort_keys=True))
        raise SystemExit(0)
    if sys.argv[1:] != ["write"]:
        raise SystemExit("usage: demo_golden.py write")
    with tempfile.TemporaryDirectory() as tmp:
        record = run_demo_pinned(Path(tmp) / "demo")
    GOLDEN.write_text(json.dumps(record, indent=1, sort_keys=True) + "\n")
    print(f"written {GOLDEN}")
