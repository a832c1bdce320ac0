"""Event attributions for 1,000 users with the demo GRU: seconds per method, against one plain forward pass.

    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/bench_attributions.py [--users 1000] [--steps 50]

Trains the demo GRU (the default size: hidden 32, two bidirectional layers,
the last 64 events) on make_payments, then times, on CPU and on a GPU when
torch sees one, for the same users in the same process:

* one plain teacher forward pass over them (``as_teacher(gru).score``),
* integrated gradients (``n_steps`` Gauss-Legendre points), with its
  completeness gap,
* event ablation (Captum's FeatureAblation, one event at a time),
* DeepLift, measured only (the reason ablation is the second method): its
  completeness gap against the score difference it should add up to,
* occlusion (drop one event, re-score; the most recent 64 events),

and prints seconds and the ratio to the forward pass. With ``--agreement N``
it also explains the GRU and prints the rule-model agreement of N held-out
users (IG and occlusion) beside the share of events the fired rules read.
Never part of the tests.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import torch

import rudi_explain as rx
from rudi_explain.audit.attributions import attribute_events
from rudi_explain.teachers.adapters import as_teacher
from rudi_explain.teachers.demo_gru import train_demo_gru


def _timed(fn):
    start = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - start


def _sync(device: str) -> None:
    if device == "cuda":
        torch.cuda.synchronize()


def run(gru, seqs, idx, device: str, steps: int, batch_size: int | None, methods: list[str]) -> None:
    gru = gru.to(device)
    teacher = as_teacher(gru)
    sub = seqs.subset(idx)
    teacher.score(sub)  # warm-up (threads, allocator, cuDNN plans)
    _sync(device)
    _, forward = _timed(lambda: (teacher.score(sub), _sync(device)))
    n_events = int(seqs.lengths[idx].sum())
    read = int(np.minimum(seqs.lengths[idx], gru.max_len).sum())
    print(f"\n[{device}] {len(idx):,} users, {n_events:,} events ({read:,} read by the GRU, last {gru.max_len}); "
          f"torch threads {torch.get_num_threads()}")
    print(f"  {'method':<22} {'seconds':>9} {'x forward':>10}  notes")
    print(f"  {'forward pass':<22} {forward:9.3f} {1.0:10.1f}")
    for method in methods:
        kw = {"n_steps": steps} if method == "integrated_gradients" else {}
        if method in ("integrated_gradients", "ablation", "deeplift"):
            kw["batch_size"] = batch_size
        batch, seconds = _timed(lambda method=method, kw=kw: (attribute_events(teacher, seqs, idx, method, **kw),
                                                             _sync(device))[0])
        note = ""
        if batch.delta is not None:
            change = np.abs(batch.score - batch.reference)
            gap = np.abs(batch.delta)
            share = gap / np.maximum(change, 1e-12)
            note = (f"completeness gap |sum - (score - baseline)|: median {np.median(gap):.1e}, "
                    f"max {gap.max():.1e}; share of |score - baseline|: median {np.median(share):.2%}, "
                    f"99th pct {np.quantile(share, 0.99):.2%}")
        elif method == "occlusion":
            note = f"{int(np.isfinite(batch.attribution).sum()):,} events occluded"
        print(f"  {method:<22} {seconds:9.3f} {seconds / forward:10.1f}  {note}")


def agreement(gru, seqs, n_users: int) -> None:
    """Explain the GRU over all users, then the agreement of held-out users for IG and occlusion."""
    from rudi_explain.audit.attributions import agreement_summary

    start = time.perf_counter()
    exp = rx.explain(gru, seqs, background=False, progress=lambda e: None, random_state=0)
    print(f"\nexplain(): {exp!r} in {time.perf_counter() - start:.1f} s")
    print(exp.rules)
    for method in ("integrated_gradients", "occlusion"):
        summary = agreement_summary(exp, n_users=n_users, method=method, random_state=0)
        d = summary.describe()
        q = summary.quantiles
        print(f"  {method:<22} {d['n_defined']} of {d['n_users']} held-out users with a fired rule, "
              f"{d['seconds']:.1f} s: agreement mean {d['agreement_mean']:.3f}, deciles 10/50/90 "
              f"{q.iloc[0]:.3f} / {q.iloc[2]:.3f} / {q.iloc[4]:.3f}; share of events the rules read "
              f"{d['event_share_mean']:.3f}; lift (agreement / share) median {d['lift_median']:.3f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--users", type=int, default=1000, help="users to attribute")
    parser.add_argument("--train-users", type=int, default=2000)
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--steps", type=int, default=32, help="IG integration points")
    parser.add_argument("--batch-size", type=int, default=None, help="users per IG / ablation batch")
    parser.add_argument("--threads", type=int, default=1, help="torch threads on CPU")
    parser.add_argument("--methods", default="integrated_gradients,ablation,deeplift,occlusion")
    parser.add_argument("--cpu-only", action="store_true")
    parser.add_argument("--agreement", type=int, default=0, metavar="N",
                        help="also explain the GRU (rx.explain) and print the rule-model agreement of N held-out users")
    args = parser.parse_args()

    data = rx.datasets.make_payments(args.train_users + args.users, random_state=0)
    seqs = data.sequences()
    train_idx = np.arange(args.train_users)
    train = seqs.subset(train_idx)
    start = time.perf_counter()
    gru = train_demo_gru(train, data.labels.reindex(train.users), epochs=args.epochs, random_state=0,
                         num_threads=args.threads)
    print(f"demo GRU (hidden 32, max_len {gru.max_len}) trained on {train.n_users:,} users in "
          f"{time.perf_counter() - start:.1f} s")
    gru.num_threads = args.threads
    idx = np.arange(args.train_users, args.train_users + args.users)
    methods = [m for m in args.methods.split(",") if m]
    run(gru, seqs, idx, "cpu", args.steps, args.batch_size, methods)
    if args.agreement:
        agreement(gru, seqs, args.agreement)
    if torch.cuda.is_available() and not args.cpu_only:
        print(f"GPU: {torch.cuda.get_device_name(0)}")
        run(gru, seqs, idx, "cuda", args.steps, args.batch_size or 256, methods)
    else:
        print("\n(no GPU seen by torch: CPU figures only)")


if __name__ == "__main__":
    main()
