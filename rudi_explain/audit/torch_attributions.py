"""Event attributions of a PyTorch teacher through Captum: integrated gradients and feature ablation.

Categorical codes are not differentiable, so the gradients are taken at the outputs of the
model's ``nn.Embedding`` layers (replaced by hooks, as Captum's ``LayerIntegratedGradients``
does) and at the float inputs; ablation sets one event at a time to the baseline (padding
content, same length). See :mod:`rudi_explain.audit.attributions` for the methods' notes.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np

from rudi_explain.audit.event_batch import EventBatch
from rudi_explain.data.sequences import Sequences
from rudi_explain.exceptions import InputError, InputTypeError
from rudi_explain.teachers.adapters import TorchTeacher

__all__ = ["torch_batch", "GRADIENT_BATCH"]

#: Users per IG or ablation batch: with 32 steps, 64 users are 2,048 sequences per forward and backward pass.
GRADIENT_BATCH = 64


def _reduce(out: Any, probabilities: bool | None) -> Any:
    """The teacher's score from a module output, as :class:`TorchTeacher` reads it."""
    if out.ndim == 2 and out.shape[1] == 1:
        return out[:, 0]
    if out.ndim == 2 and out.shape[1] == 2:
        return out[:, 1] if probabilities else out[:, 1] - out[:, 0]
    if out.ndim != 1:
        raise InputError(f"the module returned shape {tuple(out.shape)}; expected (B,), (B, 1) or (B, 2)")
    return out


def _is_probabilities(out: Any) -> bool | None:
    if out.ndim == 2 and out.shape[1] == 2:
        finite = out[~(~out.isfinite()).any(dim=1)]
        return bool(((finite >= 0) & (finite <= 1)).all()) and bool(
            ((finite.sum(dim=1) - 1).abs() <= 1e-4).all())
    return None


class _Inputs:
    """An encoding's tensors, and how to call the module with a replacement for some of them."""

    def __init__(self, encoded: Any) -> None:
        import torch

        if isinstance(encoded, torch.Tensor):
            self.names, self.tensors, self.single = None, [encoded], True
        elif isinstance(encoded, dict):
            self.names, self.tensors, self.single = list(encoded), list(encoded.values()), False
        elif isinstance(encoded, (tuple, list)):
            self.names, self.tensors, self.single = None, list(encoded), False
        else:
            raise InputTypeError(f"encode returned {type(encoded).__name__}; expected a tuple of tensors, a dict or a "
                            "tensor")

    def call(self, model: Any, tensors: list) -> Any:
        if self.single:
            return model(tensors[0])
        if self.names is not None:
            return model(**dict(zip(self.names, tensors)))
        return model(*tensors)


class _Replay:
    """``forward(*attributed, *all_inputs) -> scores``: the module with some inputs and embedding outputs replaced.

    Float event tensors are replaced as inputs; embedding outputs through
    forward hooks that return the given tensor instead of the lookup (what
    Captum's ``LayerIntegratedGradients`` does), so that gradients reach the
    embedded categories.
    """

    def __init__(self, model: Any, inputs: _Inputs, float_slots: list[int], embeddings: list,
                 probabilities: bool | None) -> None:
        self.model, self.inputs = model, inputs
        self.float_slots, self.embeddings = float_slots, embeddings
        self.probabilities = probabilities
        self.overrides: dict = {}

    def hook(self, module: Any, args: Any, output: Any) -> Any:
        return self.overrides.get(module, output)

    def __call__(self, *args: Any) -> Any:
        n_f, n_e = len(self.float_slots), len(self.embeddings)
        attributed, originals = args[:n_f + n_e], list(args[n_f + n_e:])
        for slot, x in zip(self.float_slots, attributed[:n_f]):
            originals[slot] = x
        self.overrides = dict(zip(self.embeddings, attributed[n_f:]))
        try:
            return _reduce(self.inputs.call(self.model, originals), self.probabilities)
        finally:
            self.overrides = {}


class _TorchContext:
    """Eval mode, gradients on, the module's threads; cuDNN's RNN backward needs training mode, given here
    only to recurrent layers without dropout (so nothing random runs), else cuDNN is switched off."""

    def __init__(self, teacher: TorchTeacher, device: Any) -> None:
        self.teacher, self.device = teacher, device

    def __enter__(self) -> _TorchContext:
        import torch

        model = self.teacher.model
        self.modes = [(m, m.training) for m in model.modules()]
        self.threads = torch.get_num_threads()
        wanted = self.teacher.num_threads if self.teacher.num_threads is not None else getattr(model, "num_threads",
                                                                                               None)
        if wanted is not None:
            torch.set_num_threads(int(wanted))
        model.eval()
        self.cudnn = None
        if self.device.type == "cuda":
            rnns = [m for m in model.modules() if isinstance(m, torch.nn.RNNBase)]
            if all(float(getattr(m, "dropout", 0.0)) == 0.0 for m in rnns):
                for m in rnns:
                    m.training = True
            else:
                self.cudnn = torch.backends.cudnn.flags(enabled=False)
                self.cudnn.__enter__()
        self.grad = torch.enable_grad()
        self.grad.__enter__()
        return self

    def __exit__(self, *exc: Any) -> None:
        import torch

        self.grad.__exit__(*exc)
        if self.cudnn is not None:
            self.cudnn.__exit__(*exc)
        torch.set_num_threads(self.threads)
        for module, training in self.modes:
            module.training = training


def _column_names(teacher: TorchTeacher, seqs: Sequences) -> tuple[list[str], list[str]] | None:
    """Categorical and numerical columns of the default encoding, in its order; None for a custom encode."""
    if teacher.encode is not None:
        return None
    m = teacher.model
    return (list(getattr(m, "categorical_", None) or seqs.categorical),
            list(getattr(m, "numerical_", None) or seqs.numerical))


def torch_batch(teacher: TorchTeacher, seqs: Sequences, idx: np.ndarray, method: str, n_steps: int,
                 batch_size: int | None, internal_batch_size: int | None) -> EventBatch:
    import torch
    model = teacher.model
    device = teacher.model_device()
    encode = teacher.encode or teacher.default_encode
    max_len = getattr(model, "max_len", None)
    n = seqs.lengths[idx].astype(np.int64)
    read = n if max_len is None else np.minimum(n, int(max_len))
    positions, segment = seqs.batch_positions(idx)
    block_start = np.zeros(len(idx), dtype=np.int64)
    np.cumsum(n[:-1], out=block_start[1:])
    local = np.arange(len(positions), dtype=np.int64) - block_start[segment]
    attribution = np.full(len(positions), np.nan)
    columns: dict[str, np.ndarray] = {}
    score, reference, delta = np.full(len(idx), np.nan), np.full(len(idx), np.nan), np.full(len(idx), np.nan)
    names = _column_names(teacher, seqs)
    per_batch = batch_size or GRADIENT_BATCH
    order = np.argsort(n, kind="stable")  # similar lengths together: less padding
    embeddings_all = [m for m in model.modules() if isinstance(m, torch.nn.Embedding)]
    notes: set[str] = set()

    with _TorchContext(teacher, device):
        for s0 in range(0, len(idx), per_batch):  # a loop over batches of users
            rows = order[s0:s0 + per_batch]
            inputs = _Inputs(encode(seqs, idx[rows]))
            tensors = [t.to(device) if isinstance(t, torch.Tensor) else t for t in inputs.tensors]
            B = len(rows)
            event_like = [i for i, t in enumerate(tensors) if isinstance(t, torch.Tensor) and t.ndim >= 2
                          and t.shape[0] == B]
            if not event_like:
                raise InputError("the encoding has no tensor of shape (users, events, ...) to attribute")
            T = int(tensors[event_like[0]].shape[1])
            if int(read[rows].max()) > T:
                raise InputError(f"the encoding holds {T} events per user, but users of this batch have up to "
                                 f"{int(read[rows].max())} and the module has no max_len saying how many it keeps: "
                                 "set model.max_len to the encoding's truncation (the most recent events are kept)")
            float_slots = [i for i in event_like if tensors[i].is_floating_point()]
            int_slots = [i for i in event_like if not tensors[i].is_floating_point()]
            baseline_tensors = [torch.zeros_like(t) if i in event_like else t for i, t in enumerate(tensors)]

            seen, seen_base, y, y_base, probabilities = _probe(model, inputs, tensors, baseline_tensors,
                                                               embeddings_all)
            if method == "ablation":
                per_event, per_column = _ablate(model, inputs, tensors, baseline_tensors, event_like, probabilities,
                                                B, T, internal_batch_size)
            else:
                embeddings = _replaceable(embeddings_all, seen, B, T)
                emb_names = [_embedding_name(j, seen[e][0][0], tensors, int_slots, names)
                             for j, e in enumerate(embeddings)]
                xs = tuple(tensors[i] for i in float_slots) + tuple(seen[e][0][1] for e in embeddings)
                bs = tuple(baseline_tensors[i] for i in float_slots) + tuple(seen_base[e][0][1] for e in embeddings)
                got = _integrate(model, inputs, tensors, float_slots, embeddings, probabilities, xs, bs, method,
                                 n_steps, internal_batch_size)
                per_event, per_column = np.zeros((B, T)), {}
                for slot, g in zip(float_slots, got[:len(float_slots)]):
                    g = g.reshape(B, T, -1)
                    for c, name in enumerate(_channel_names(slot, g.shape[2], names)):
                        per_column[name] = per_column.get(name, 0.0) + g[..., c].numpy()
                for name, g in zip(emb_names, got[len(float_slots):]):
                    per_column[name] = per_column.get(name, 0.0) + g.reshape(B, T, -1).sum(dim=2).numpy()
                for v in per_column.values():
                    per_event += v
                delta[rows] = per_event.sum(axis=1) - (y - y_base).to("cpu", torch.float64).numpy()
                reference[rows] = y_base.to("cpu", torch.float64).numpy()
            score[rows] = y.to("cpu", torch.float64).numpy()

            # Tensor position t of batch row r is the user's event n - read + t (the most recent `read`).
            r = np.repeat(np.arange(B), read[rows])
            t = np.arange(int(read[rows].sum())) - np.repeat(np.cumsum(read[rows]) - read[rows], read[rows])
            flat = block_start[rows][r] + (n[rows] - read[rows])[r] + t
            attribution[flat] = per_event[r, t]
            for name, v in per_column.items():
                columns.setdefault(name, np.full(len(positions), np.nan))[flat] = v[r, t]
            if (read[rows] < n[rows]).any():
                notes.add(f"the model reads only the last {max_len} events of a user (max_len): older events "
                          "are not attributed (NaN)")
    return EventBatch(idx, segment, local, attribution, columns, score,
                  reference if method != "ablation" else None, delta if method != "ablation" else None,
                  "; ".join(sorted(notes)))


def _probe(model: Any, inputs: _Inputs, tensors: list, baseline_tensors: list, embeddings: list) -> tuple:
    """One forward pass at the input and one at the baseline, recording every embedding's input and output.

    Returns ``(seen, seen_base, y, y_base, probabilities)``: per embedding the
    list of its calls ``(input, output)``, the scores, and how a two-column
    output is read (see :class:`TorchTeacher`).
    """
    import torch

    captured: dict = {}

    def record(module: Any, args: Any, output: Any) -> None:
        captured.setdefault(module, []).append((args[0] if args else None, output))

    hooks = [e.register_forward_hook(record) for e in embeddings]
    try:
        with torch.no_grad():
            out = inputs.call(model, tensors)
            seen = dict(captured)
            captured.clear()
            out_base = inputs.call(model, baseline_tensors)
            seen_base = dict(captured)
    finally:
        for h in hooks:
            h.remove()
    probabilities = _is_probabilities(out)
    return seen, seen_base, _reduce(out, probabilities).detach(), _reduce(out_base, probabilities).detach(), \
        probabilities


def _replaceable(embeddings: list, seen: dict, B: int, T: int) -> list:
    """The embeddings that embed the events: called once, with an output of shape (B, T, ...)."""
    out = []
    for e in embeddings:
        calls = seen.get(e, [])
        if len(calls) > 1:
            raise NotImplementedError(f"the embedding {e} is called {len(calls)} times in one forward pass: its "
                                      "output cannot be replaced for integrated gradients; use method='ablation' "
                                      "or 'occlusion'")
        if len(calls) == 1 and calls[0][1].ndim >= 3 and tuple(calls[0][1].shape[:2]) == (B, T):
            out.append(e)
    return out


def _embedding_name(j: int, codes: Any, tensors: list, int_slots: list[int], names: tuple | None) -> str:
    """The data column an embedding embeds: found by matching its input against the encoding's code columns."""
    import torch

    for i in int_slots:
        t = tensors[i]
        for c in range(t.shape[2] if t.ndim == 3 else 0):
            if codes is not None and codes.shape == t[..., c].shape and torch.equal(codes, t[..., c]):
                return names[0][c] if names is not None and i == 0 and c < len(names[0]) else f"input {i}[{c}]"
    return f"embedding {j}"


def _channel_names(i: int, width: int, names: tuple | None) -> list[str]:
    """A name per channel of float tensor ``i``: the numerical column, for the default encoding."""
    if names is not None and i == 1 and width == 2 * len(names[1]):
        return names[1] + names[1]  # value channels, then missing flags, of each column
    return [f"input {i}[{c}]" for c in range(width)]


def _ablate(model: Any, inputs: _Inputs, tensors: list, baseline_tensors: list, event_like: list[int],
            probabilities: bool | None, B: int, T: int, internal_batch_size: int | None) -> tuple[np.ndarray, dict]:
    """Captum's FeatureAblation with one feature per event (all its tensors and channels): (B, T) attributions."""
    import torch
    from captum.attr import FeatureAblation

    steps = torch.arange(T, device=tensors[event_like[0]].device)
    masks = tuple(steps.reshape([1, T] + [1] * (tensors[i].ndim - 2)).expand_as(tensors[i]).contiguous()
                  for i in event_like)
    rest = [i for i in range(len(tensors)) if i not in event_like]

    def forward(*xs: Any) -> Any:
        full = list(tensors)
        for i, x in zip(event_like + rest, xs):
            full[i] = x
        return _reduce(inputs.call(model, full), probabilities)

    got = FeatureAblation(forward).attribute(
        tuple(tensors[i] for i in event_like), baselines=tuple(baseline_tensors[i] for i in event_like),
        additional_forward_args=tuple(tensors[i] for i in rest) or None, feature_mask=masks,
        perturbations_per_eval=max(1, (internal_batch_size or 4096) // B))
    return got[0].reshape(B, T, -1)[..., 0].detach().to("cpu", torch.float64).numpy(), {}


def _integrate(model: Any, inputs: _Inputs, tensors: list, float_slots: list[int], embeddings: list,
               probabilities: bool | None, xs: tuple, bs: tuple, method: str, n_steps: int,
               internal_batch_size: int | None) -> list:
    """IG (or, for the measurement, DeepLift) at the float inputs and the embedding outputs; on the CPU."""
    import torch
    from captum.attr import DeepLift, IntegratedGradients

    replay = _Replay(model, inputs, float_slots, embeddings, probabilities)
    hooks = [e.register_forward_hook(replay.hook) for e in embeddings]
    try:
        if method == "integrated_gradients":
            got = IntegratedGradients(replay).attribute(xs, baselines=bs, additional_forward_args=tuple(tensors),
                                                        n_steps=n_steps, internal_batch_size=internal_batch_size)
        else:  # deeplift: measured in the benchmark, not offered
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                got = DeepLift(_as_module(replay)).attribute(xs, baselines=bs, additional_forward_args=tuple(tensors))
    finally:
        for h in hooks:
            h.remove()
    return [g.detach().to("cpu", torch.float64) for g in got]


def _as_module(replay: _Replay) -> Any:
    """The replayed teacher as an ``nn.Module`` (DeepLift wants one)."""
    import torch

    class Wrapped(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            # A submodule, so that DeepLift finds (and hooks) the teacher's nonlinearities.
            self.inner = replay.model

        def forward(self, *args: Any) -> Any:
            return replay(*args)

    return Wrapped()
