"""Demo teachers: a small GRU and a scikit-learn pipeline over Sequences.

Both are real black boxes to explain in tutorials, tests and ``rudi-explain
demo``, trained locally in seconds:

* :func:`train_demo_gru`: the seed paper's GRU teacher (bidirectional, two
  layers), smaller, over :func:`~rudi_explain.teachers.encode_padded` tensors;
* :func:`make_demo_pipeline`: its LightGBM teacher, as scikit-learn's
  ``HistGradientBoostingClassifier`` over :class:`SequenceAggregator`.

``rudi_explain.datasets`` re-exports both.
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np
import pandas as pd

from rudi_explain.data.sequences import Sequences
from rudi_explain.exceptions import InputError, InputTypeError
from rudi_explain.teachers.adapters import encode_padded, given_scores
from rudi_explain.teachers.aggregator import SequenceAggregator
from rudi_explain.validation import check_whole

__all__ = ["train_demo_gru", "make_demo_pipeline", "DEMO_MAX_LEN"]

#: Events per user the demo GRU reads: the most recent ones. On
#: ``make_payments`` the median user has about 33 events and 77% of users at
#: most 64, so little is lost while an epoch stays short.
DEMO_MAX_LEN = 64


def _signed_log1p(x: Any) -> Any:
    import torch

    return torch.sign(x) * torch.log1p(torch.abs(x))


def _reverse_within(x: Any, lengths: Any) -> Any:
    """Reverse each row's first ``lengths[b]`` steps, padding left in place; its own inverse."""
    import torch

    steps = torch.arange(x.shape[1], device=x.device)
    flipped = lengths[:, None] - 1 - steps[None, :]
    index = torch.where(flipped >= 0, flipped, steps[None, :])
    return x.gather(1, index[..., None].expand_as(x))


@functools.cache
def _demo_gru_class() -> type:
    # Built on first use so that importing rudi_explain does not import torch;
    # cached so that every demo GRU is an instance of one class.
    import torch
    from torch import nn

    class DemoGRU(nn.Module):
        """Bidirectional 2-layer GRU over ``(cat_codes, num_values, lengths)``.

        ``forward(cat_codes (B, T, n_cat) long, num_values (B, T, 2 n_num)
        float, lengths (B,) long) -> (B,)`` logits of label 1, the layout of
        :func:`~rudi_explain.teachers.encode_padded`. Numerical values go
        through ``sign(x) log1p(|x|)`` (amounts are heavy-tailed) and are
        standardized with the training mean and scale held as buffers;
        missing values become 0 after standardization, with their missing
        flag as an input of their own. The head reads the last state of each
        direction, the mean output over time and the log length (a mean
        times a length recovers sums such as total spend).

        Each direction of each layer is its own one-way ``nn.GRU`` over
        right-padded batches; the backward one reads every sequence reversed
        within its length. This computes exactly what a packed
        ``nn.GRU(bidirectional=True, num_layers=2)`` does (padding never
        reaches a real step, so a user's score does not depend on its batch)
        at about a quarter of the packed cost on CPU.
        """

        def __init__(self, vocab_sizes: list[int], n_num: int, hidden_size: int = 32,
                     embedding_dim: int = 8, dropout: float = 0.1) -> None:
            super().__init__()
            self.n_num = n_num
            self.embeddings = nn.ModuleList(
                nn.Embedding(v + 2, embedding_dim, padding_idx=0) for v in vocab_sizes)
            self.register_buffer("num_mean", torch.zeros(n_num))
            self.register_buffer("num_scale", torch.ones(n_num))
            n_in = embedding_dim * len(vocab_sizes) + 2 * n_num
            self.forward_layers = nn.ModuleList(
                [nn.GRU(n_in, hidden_size, batch_first=True), nn.GRU(2 * hidden_size, hidden_size, batch_first=True)])
            self.backward_layers = nn.ModuleList(
                [nn.GRU(n_in, hidden_size, batch_first=True), nn.GRU(2 * hidden_size, hidden_size, batch_first=True)])
            self.dropout = nn.Dropout(dropout)
            self.head = nn.Sequential(nn.Linear(4 * hidden_size + 1, hidden_size), nn.ReLU(),
                                      nn.Dropout(dropout), nn.Linear(hidden_size, 1))

        def forward(self, cat_codes: torch.Tensor, num_values: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
            k = self.n_num
            lengths = lengths.to(num_values.device)
            values, missing = num_values[..., :k], num_values[..., k:]
            steps = torch.arange(num_values.shape[1], device=num_values.device)
            valid = (steps[None, :] < lengths[:, None]).to(num_values.dtype)[..., None]
            values = (_signed_log1p(values) - self.num_mean) / self.num_scale
            values = values * (1 - missing) * valid
            parts = [emb(cat_codes[..., j]) for j, emb in enumerate(self.embeddings)]
            x = torch.cat(parts + [values, missing], dim=-1)
            last = (lengths - 1)[:, None, None]
            for i, (fwd, bwd) in enumerate(zip(self.forward_layers, self.backward_layers)):
                if i:
                    x = self.dropout(x)
                out_f, _ = fwd(x)
                out_b_reversed, _ = bwd(_reverse_within(x, lengths))
                x = torch.cat([out_f, _reverse_within(out_b_reversed, lengths)], dim=-1)
            hidden = out_f.shape[-1]
            h_f = out_f.gather(1, last.expand(-1, 1, hidden))[:, 0]
            h_b = out_b_reversed.gather(1, last.expand(-1, 1, hidden))[:, 0]
            mean = (x * valid).sum(dim=1) / lengths[:, None].to(x.dtype)
            features = torch.cat([h_f, h_b, mean, torch.log1p(lengths.to(x.dtype))[:, None]], dim=-1)
            return self.head(features).squeeze(-1)

    DemoGRU.__module__ = __name__
    DemoGRU.__qualname__ = "DemoGRU"
    return DemoGRU


def train_demo_gru(
    seqs: Sequences,
    target: pd.Series | np.ndarray,
    *,
    hidden_size: int = 32,
    embedding_dim: int = 8,
    epochs: int = 6,
    batch_size: int = 128,
    learning_rate: float = 5e-3,
    dropout: float = 0.1,
    max_len: int = DEMO_MAX_LEN,
    random_state: int = 0,
    device: str = "cpu",
    num_threads: int | None = 1,
    in_users_order: bool = False,
) -> Any:
    """Train the demo teacher: a small bidirectional 2-layer GRU.

    Parameters
    ----------
    seqs : Sequences
        Training users. Every categorical and numerical column is used.
    target : pandas Series indexed by user id, or array-like of shape (n_users,)
        0/1 labels, a Series aligned by id (an array only with
        ``in_users_order=True``: its order cannot be checked). Trained with
        binary cross-entropy on logits.
    hidden_size : int, default=32
        GRU units per direction (the paper uses 128).
    embedding_dim : int, default=8
        Embedding size of each categorical column.
    epochs : int, default=6
    batch_size : int, default=128
    learning_rate : float, default=5e-3
        Adam's step size.
    dropout : float, default=0.1
        Between the GRU layers and in the head (the paper uses 0.2).
    max_len : int, default=64
        Only each user's last ``max_len`` events are read, in training and
        when scored through :func:`~rudi_explain.teachers.as_teacher` (the
        module's ``max_len`` attribute).
    random_state : int, default=0
        Seeds the initialisation, dropout and the batch order. Torch's global
        random state is forked for the training and restored afterwards.
    device : str, default="cpu"
    num_threads : int or None, default=1
        Intra-op threads torch uses while training, restored afterwards (None:
        leave torch's setting). A GRU this small runs fastest on one thread:
        its many tiny steps gain nothing from more, and extra threads
        spin-wait badly on a busy machine (10x slower seen on 2 shared cores).
    in_users_order : bool, default=False
        Say that a bare array ``target`` follows ``seqs.users``.

    Returns
    -------
    torch.nn.Module
        In eval mode, on ``device``. ``forward(cat_codes, num_values,
        lengths) -> (B,)`` logits of label 1 (see
        :func:`~rudi_explain.teachers.encode_padded`). Attributes
        ``max_len``, ``categorical_``, ``numerical_`` and ``vocabularies_``
        let :func:`~rudi_explain.teachers.as_teacher` encode new sequences
        the same way (recoding their categories to the training ones), and
        ``num_threads`` (as given) sets torch's threads while it scores.

    Examples
    --------
    >>> data = make_payments(5000)                     # doctest: +SKIP
    >>> gru = train_demo_gru(data.sequences(), data.labels)   # doctest: +SKIP
    >>> as_teacher(gru).score(data.sequences())         # doctest: +SKIP
    """
    import torch

    if not isinstance(seqs, Sequences):
        raise InputTypeError(f"train_demo_gru needs a Sequences, got {type(seqs).__name__}")
    y = given_scores(target, seqs, in_users_order=in_users_order)
    if not np.isin(y, (0.0, 1.0)).all():
        raise InputError("the demo GRU is trained on 0/1 labels; the target has other values")
    for name, value, low in (("hidden_size", hidden_size, 1), ("embedding_dim", embedding_dim, 1),
                             ("epochs", epochs, 1), ("batch_size", batch_size, 1), ("max_len", max_len, 1)):
        check_whole(value, name, min_value=low)
    torch_device = torch.device(device)
    categorical, numerical = list(seqs.categorical), list(seqs.numerical)
    cat, num, lengths = encode_padded(seqs, None, max_len)
    # Standardization statistics of the transformed numerical values, real events only.
    k = len(numerical)
    mean, scale = np.zeros(k, dtype=np.float32), np.ones(k, dtype=np.float32)
    valid = (np.arange(cat.shape[1])[None, :] < lengths.numpy()[:, None])
    for j in range(k):
        seen = valid & (num[..., k + j].numpy() == 0)
        x = _signed_log1p(num[..., j][torch.from_numpy(seen)]).numpy()
        if len(x):
            mean[j] = x.mean()
            scale[j] = x.std() if x.std() > 0 else 1.0
    labels = torch.from_numpy(y.astype(np.float32))

    devices = [torch_device] if torch_device.type == "cuda" else []
    threads = torch.get_num_threads()
    if num_threads is not None:
        torch.set_num_threads(int(num_threads))
    try:
        model = _train(seqs, cat, num, lengths, labels, mean, scale, devices, hidden_size=hidden_size,
                       embedding_dim=embedding_dim, epochs=epochs, batch_size=batch_size,
                       learning_rate=learning_rate, dropout=dropout, random_state=random_state, device=torch_device)
    finally:
        torch.set_num_threads(threads)
    model.eval()
    model.max_len = int(max_len)
    model.categorical_ = categorical
    model.numerical_ = numerical
    model.vocabularies_ = {c: tuple(seqs.vocabularies[c]) for c in categorical}
    # Scoring through as_teacher uses this many threads (see TorchTeacher).
    model.num_threads = None if num_threads is None else int(num_threads)
    return model


def _train(seqs: Sequences, cat: Any, num: Any, lengths: Any, labels: Any, mean: np.ndarray, scale: np.ndarray,
           devices: list, *, hidden_size: int, embedding_dim: int, epochs: int, batch_size: int,
           learning_rate: float, dropout: float, random_state: int, device: Any) -> Any:
    import torch

    categorical = list(seqs.categorical)
    k = len(mean)
    with torch.random.fork_rng(devices=devices):
        torch.manual_seed(random_state)
        model = _demo_gru_class()([len(seqs.vocabularies[c]) for c in categorical], k, hidden_size,
                                  embedding_dim, dropout)
        model.num_mean.copy_(torch.from_numpy(mean))
        model.num_scale.copy_(torch.from_numpy(scale))
        model.to(device)
        optimizer = torch.optim.Adam(model.parameters(), lr=learning_rate)
        loss_fn = torch.nn.BCEWithLogitsLoss()
        order_gen = torch.Generator().manual_seed(random_state)
        n = seqs.n_users
        model.train()
        for _ in range(epochs):
            # Batches of similar lengths (sorted after a random shuffle, so ties
            # mix) waste little on padding; the batch order is then shuffled.
            perm = torch.randperm(n, generator=order_gen)
            perm = perm[torch.argsort(lengths[perm], stable=True)]
            batches = list(torch.split(perm, batch_size))
            for b in torch.randperm(len(batches), generator=order_gen).tolist():
                idx = batches[b]
                t = int(lengths[idx].max())  # trim padding beyond this batch's longest user
                logits = model(cat[idx, :t].to(device), num[idx, :t].to(device), lengths[idx].to(device))
                loss = loss_fn(logits, labels[idx].to(device))
                optimizer.zero_grad(set_to_none=True)
                loss.backward()
                torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
                optimizer.step()
    return model


def make_demo_pipeline(random_state: int | None = 0, *, in_users_order: bool = False) -> Any:
    """The demo scikit-learn teacher, unfitted.

    ``make_pipeline(SequenceAggregator(), HistGradientBoostingClassifier(random_state=random_state))``:
    the seed paper's LightGBM teacher over every single aggregation. Fit it on
    Sequences: ``make_demo_pipeline().fit(seqs, labels)``, with ``labels`` a
    Series indexed by user id in ``seqs.users`` order (the pipeline's last
    step reads them by position; see :class:`SequenceAggregator`).

    Parameters
    ----------
    random_state : int or None, default=0
    in_users_order : bool, default=False
        Accept a bare array of labels in ``seqs.users`` order (its order
        cannot be checked).

    Returns
    -------
    sklearn.pipeline.Pipeline
    """
    from sklearn.ensemble import HistGradientBoostingClassifier
    from sklearn.pipeline import make_pipeline

    return make_pipeline(SequenceAggregator(in_users_order=in_users_order),
                         HistGradientBoostingClassifier(random_state=random_state))
