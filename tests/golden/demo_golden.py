"""What ``make demo`` leaves behind at seed 0, reduced to what must not change when code moves.

``python tests/golden/demo_golden.py write`` runs ``rudi-explain demo`` and stores the result in
``tests/golden/demo.json``; ``test_golden.py`` runs it again and compares. Timings are dropped
(they differ run to run); everything else (the printed text, the rules, the report's figures,
the saved explanation's JSON and a digest of each saved array) must be identical.
"""

from __future__ import annotations

import hashlib
import io
import json
import re
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

    if sys.argv[1:] != ["write"]:
        raise SystemExit("usage: demo_golden.py write")
    with tempfile.TemporaryDirectory() as tmp:
        record = run_demo(Path(tmp) / "demo")
    GOLDEN.write_text(json.dumps(record, indent=1, sort_keys=True) + "\n")
    print(f"written {GOLDEN}")
