"""The ``rudi-explain`` command line."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

__all__ = ["main"]


def _demo(args: argparse.Namespace) -> int:
    from rudi_explain.datasets import make_payments

    t0 = time.perf_counter()
    demo = make_payments(args.users, random_state=args.random_state)
    seqs = demo.sequences()
    print(f"demo data: {seqs!r} in {time.perf_counter() - t0:.1f} s")
    print(f"planted risk = {demo.formula}")
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    lines = []
    for stat in demo.planted:
        values = stat.evaluate(seqs)
        names = stat.output_names(seqs)
        column = values if values.ndim == 1 else values[:, 0]
        defined = np.isfinite(column)
        risk = demo.risk.to_numpy()
        corr = np.corrcoef(column[defined], risk[defined])[0, 1] if defined.sum() > 2 else float("nan")
        line = f"{str(stat):<75} depth {stat.depth}  corr(risk, {names[0][:30]}) = {corr:+.3f}"
        print("  " + line)
        print("      " + stat.describe(names[0] if values.ndim == 2 else None, data=seqs))
        lines.append(line)
    (out / "planted.txt").write_text("\n".join(lines) + "\n")
    print(f"wrote {out / 'planted.txt'}")
    return 0


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``rudi-explain`` command."""
    parser = argparse.ArgumentParser(prog="rudi-explain", description="Explain a sequence model with a few weighted rules.")
    sub = parser.add_subparsers(dest="command", required=True)
    demo = sub.add_parser("demo", help="run end to end on built-in demo data and a demo teacher")
    demo.add_argument("--out", default="out/demo", help="folder for the outputs (default: out/demo)")
    demo.add_argument("--users", type=int, default=5000, help="number of demo users (default: 5000)")
    demo.add_argument("--random-state", type=int, default=0)
    demo.set_defaults(func=_demo)
    args = parser.parse_args(argv)
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
