"""GS-NLN: the Gumbel-softmax neural logical network of the RuDi paper (section 3.3).

The network reads a binary literal vector ``z`` as ``(z, 1 - z, 1, 0)``
(the input layer), then ``L`` logical layers. Every neuron picks exactly two
of the previous layer's units, each pick a one-hot sample from a learned
categorical distribution (equations 11, 12), and ANDs (conjunction neurons)
or ORs (disjunction neurons) them. Picks are trained with the straight-through
Gumbel-softmax estimator (equation 13): the forward pass uses the hard one-hot
sample, the backward pass the gradient of the soft one. Each layer but the
last has ``H`` conjunction and ``H`` disjunction neurons and a skip connection
(its output also carries its input); the last has ``R/2`` of each and no skip,
so its ``R`` units are the rules. A linear layer weighs them. The loss is the
pairwise ranking loss of section 3.3.4 over the pairs of each mini-batch.

After training, every pick is its arg-max input, which turns each rule unit
into an AND/OR formula over literals: the network at temperature zero *is*
the rule set, and ``rules()`` returns it simplified.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from rudi_explain.exceptions import InputError
from rudi_explain.metrics import fidelity
from rudi_explain.rules.formula import FALSE, TRUE, And, Formula, Lit, Or, literal_info
from rudi_explain.rules.ruleset import RuleSet
from rudi_explain.students.base import FitProgress, RuleStudent, check_binary_matrix, check_target
from rudi_explain.validation import check_random_state_seed, check_real, check_whole

__all__ = ["GSNLN", "FitProgress"]


class _Adam:
    """Adam (Kingma and Ba) on one flat parameter buffer, as torch.optim.Adam.

    Written out because the network's parameters are small: five
    whole-buffer operations per step instead of an optimizer's per-tensor
    bookkeeping.
    """

    def __init__(self, torch, param, betas=(0.9, 0.999), eps=1e-8):
        self.param = param
        self.m = torch.zeros_like(param)
        self.v = torch.zeros_like(param)
        self.b1, self.b2 = betas
        self.eps = eps
        self.t = 0

    def step(self, grad, lr: float) -> None:
        self.t += 1
        self.m.lerp_(grad, 1 - self.b1)
        self.v.mul_(self.b2).addcmul_(grad, grad, value=1 - self.b2)
        bc1 = 1 - self.b1**self.t
        bc2_sqrt = (1 - self.b2**self.t) ** 0.5
        denom = (self.v.sqrt() / bc2_sqrt).add_(self.eps)
        self.param.addcdiv_(self.m, denom, value=-lr / bc1)


def _neuron_masks(torch, layers, device=None):
    """Per layer, ``D`` (1 for a disjunction neuron, 0 for a conjunction) and ``1 - 2 D``.

    With them AND (``ab``) and OR (``a + b - ab``) are one expression,
    ``ab (1 - 2D) + D (a + b)``, and so are their derivatives: one fused
    operation for all neurons instead of slices and concatenations.
    """
    masks = []
    for _, n_conj, n_disj, _ in layers:
        D = torch.zeros(1, n_conj + n_disj, device=device)
        D[:, n_conj:] = 1.0
        masks.append((D, 1 - 2 * D))
    return masks


def _loss_and_grads(torch, z, y, logits, w, scaled_noise, tau, layers, grads, masks=None):
    """One mini-batch: ranking loss, and its gradients written into ``grads``.

    The forward pass uses the hard Gumbel samples (each pick's input at the
    arg-max of ``logits + noise``); the backward pass the straight-through
    estimator, i.e. the gradient of ``h @ (hard - soft.detach() + soft).T``
    with ``soft = softmax((logits + noise) / tau)`` (eq. 13). Written by hand
    rather than with autograd: for a network this small, graph bookkeeping
    and extra passes over the pick matrices cost more than the arithmetic
    (tests check it against autograd).

    Parameters
    ----------
    z : tensor (m, 2 * n_literals + 2)
        The input layer of the mini-batch.
    y : tensor (m,)
        Teacher scores.
    logits : list of tensor (n_picks, n_in)
    w : tensor (n_rules,)
    scaled_noise : list of tensor like ``logits``
        Gumbel(0, 1) samples divided by ``tau``.
    grads : list of tensor
        Gradient buffers shaped like ``logits + [w]``; overwritten.
    masks : list, optional
        :func:`_neuron_masks` of ``layers``.

    Returns
    -------
    loss : 0-d tensor
    scores : tensor (m,)
    """
    if masks is None:
        masks = _neuron_masks(torch, layers, z.device)
    m = z.shape[0]
    h0 = z.shape[1]
    inv_tau = 1.0 / tau
    h = z
    cache = []
    for W, g, (_, _, _, skip), (D, U) in zip(logits, scaled_noise, layers, masks):
        perturbed = torch.add(g, W, alpha=inv_tau)  # (logits + noise) / tau
        sel = perturbed.max(-1).indices  # same arg-max as logits + noise
        soft = torch.softmax(perturbed, dim=-1)
        picked = h.index_select(1, sel)
        a, b = picked[:, 0::2], picked[:, 1::2]
        out = torch.addcmul(torch.add(a, b).mul_(D), a * b, U)  # AND or OR per neuron
        cache.append((h, a, b, soft, sel))
        h = torch.cat((out, h), dim=1) if skip else out
    s = h @ w
    # Ranking loss (section 3.3.4), mean over ordered pairs i != j of
    # -log sigmoid(s_i - s_j) if y_i > y_j, else -log sigmoid(s_j - s_i).
    # With diff[i, j] = s_j - s_i and sign +1 where y_i > y_j, -1 elsewhere,
    # the term is softplus(sign * diff). The diagonal (diff 0) adds
    # m * log 2, taken off as a constant.
    sign = (y[:, None] > y[None, :]).to(s.dtype).mul_(2).sub_(1)
    signed = (s[None, :] - s[:, None]).mul_(sign)
    scale = 1.0 / (m * (m - 1))
    loss = (torch.nn.functional.softplus(signed).sum() - m * _LOG2) * scale
    M = torch.sigmoid(signed).mul_(sign)  # d loss / d (s_j - s_i), up to scale
    g_s = (M.sum(0) - M.sum(1)) * scale  # diagonal terms cancel
    torch.mv(h.T, g_s, out=grads[-1])
    g_h = torch.outer(g_s, w)
    for layer in range(len(layers) - 1, -1, -1):
        n_in, n_conj, n_disj, skip = layers[layer]
        D, U = masks[layer]
        h_in, a, b, soft, sel = cache[layer]
        n = n_conj + n_disj
        g_out = g_h[:, :n]
        # d AND(a, b) / da = b; d OR(a, b) / da = 1 - b; both D + b (1 - 2D)
        g_a = torch.addcmul(D, b, U).mul_(g_out)
        g_b = torch.addcmul(D, a, U).mul_(g_out)
        g_picked = torch.stack((g_a, g_b), dim=2).reshape(m, 2 * n)
        # d loss / d pick weights, times 1 / tau for the softmax's scaling
        gw = grads[layer]
        torch.addmm(gw, g_picked.T, h_in, beta=0, alpha=inv_tau, out=gw)
        # softmax backward: soft * (g - <g, soft>), row by row
        gw.sub_((gw * soft).sum(-1, keepdim=True)).mul_(soft)
        if layer > 0:
            # Only units above the input layer need a gradient: every layer's
            # input ends with the h0 input units (skip connections).
            width = n_in - h0
            g_in = torch.zeros_like(h_in).index_add_(1, sel, g_picked)[:, :width]
            if skip:
                g_in += g_h[:, n : n + width]
            g_h = g_in
    return loss, s


_LOG2 = float(np.log(2.0))


def _scaled_gumbel(torch, shape, tau, np_gen, device):
    """Gumbel(0, 1) samples divided by ``tau``: ``-log(-log(u)) / tau``.

    The uniforms always come from numpy's generator on the CPU and are then
    moved to ``device``, so that a seed gives the same noise on every device
    (a CUDA generator would draw a different stream). A uniform of exactly 0
    gives -inf: that input is never picked, as in the limit.
    """
    u = torch.from_numpy(np_gen.random(shape, dtype=np.float32)).to(device)
    return u.log_().neg_().log_().mul_(-1.0 / tau)


def _flushes_denormals(torch) -> bool:
    """Whether this thread currently flushes subnormal floats to zero."""
    tiny = torch.tensor([1e-39], dtype=torch.float32)  # subnormal in float32
    return bool((tiny * 1.0).item() == 0.0)


def _linear_schedule(start: float, end: float, epoch: int, epochs: int) -> float:
    if epochs <= 1:
        return end
    return start + (end - start) * epoch / (epochs - 1)


class GSNLN(RuleStudent):
    """Gumbel-softmax neural logical network (RuDi, section 3.3).

    Parameters
    ----------
    n_rules : int, default=20
        ``R``, the number of rules: the last logical layer has ``R/2``
        conjunction and ``R/2`` disjunction neurons (one more conjunction
        when ``R`` is odd).
    hidden_size : int, default=20
        ``H``: conjunction and disjunction neurons in each other layer.
    n_layers : int, default=2
        ``L``, logical layers. Rules have at most ``2**L`` literals.
    epochs : int, default=20
        The paper uses 500 (Table 2): pass ``epochs=500`` for the paper's
        setting (the learning-rate and temperature schedules stretch over
        whatever number of epochs is set). Measured held-out fidelity, 20
        against 100 epochs (issue 17): on planted cases with 20,000 training
        users and ~125 literals, 0.9152 / 0.9007 / 0.8997 against 0.9157 /
        0.9006 / 0.9000 (three cases), in 6 to 8 s of CPU instead of 24; on
        make_payments (10,000 users, 334 literals, noisy planted risk),
        0.893 against 0.896. With thousands of literals more epochs still
        help a little (2,355 literals: 0.899 against 0.907 at 100 epochs).
        Earlier, 100 epochs were within 0.005 of 500 on make_payments.
    batch_size : int, default=128
        Users per mini-batch; the ranking loss compares the pairs within one.
    epoch_users : int or None, default=16384
        Users one epoch trains on, at most: a fresh random sample of them
        each epoch (all users when there are fewer; None: always all). An
        epoch's cost then stops growing with the users: on make_payments at
        100,000 users (64,000 to fit) the student trains 4 times faster, and
        every user still counts across the epochs (issue 27).
    lr_start, lr_end : float, default=0.1, 0.001
        Adam's learning rate, decayed linearly over the epochs.
    temperature_start, temperature_end : float, default=1.0, 0.0001
        Gumbel-softmax temperature, decayed linearly over the epochs.
    calibrate : bool, default=True
        After training, scale the rule weights by a positive factor and set
        the intercept by least squares so the scores sit on the teacher's
        scale. Orderings (and so fidelity) do not change.
    device : str, default="cpu"
        A torch device; "cuda" to train on a GPU.
    n_threads : int or None, default=1
        Torch CPU threads while fitting (restored afterwards). The network's
        tensors are small: waking more threads costs more than it saves,
        many times over on a busy machine. None leaves torch's setting.
        While fitting, subnormal floats are also flushed to zero on the
        fitting thread (restored afterwards): late in training they would
        otherwise slow the CPU arithmetic down by half.
    random_state : int or None, default=0
        Seeds parameter initialization, Gumbel noise and mini-batch order via
        a private ``torch.Generator``; the global random state is untouched.
        None is seed 0.

    Attributes
    ----------
    n_features_in_ : int
        Number of literals seen in ``fit``.
    layers_ : list of tuple of (int, int, int, bool)
        Per logical layer: its inputs, conjunctions, disjunctions, and whether
        it has a skip connection.
    selections_ : list of ndarray of int, shape (n_neurons, 2)
        Per logical layer, the two inputs each neuron picks (arg-max),
        conjunction neurons first.
    n_conjunctions_ : list of int
        Per logical layer, how many of its neurons are conjunctions.
    logits_ : list of ndarray of float32, shape (n_neurons, 2, n_inputs)
        The learned selection logits.
    weights_ : ndarray of float64, shape (n_rules,)
        Weight of each rule unit (after calibration).
    intercept_ : float
    loss_curve_ : list of float
        Mean loss per epoch.
    n_epochs_run_ : int
        Epochs run (fewer than ``epochs`` when a callback stopped training).
    fit_seconds_ : float

    Examples
    --------
    >>> student = GSNLN(epochs=50).fit(literals.transform(seqs), teacher_scores)
    >>> print(student.rules(literals))
    """

    def __init__(
        self,
        *,
        n_rules: int = 20,
        hidden_size: int = 20,
        n_layers: int = 2,
        epochs: int = 20,
        batch_size: int = 128,
        epoch_users: int | None = 16_384,
        lr_start: float = 0.1,
        lr_end: float = 0.001,
        temperature_start: float = 1.0,
        temperature_end: float = 0.0001,
        calibrate: bool = True,
        device: str = "cpu",
        n_threads: int | None = 1,
        random_state: int | None = 0,
    ):
        self.n_rules = n_rules
        self.hidden_size = hidden_size
        self.n_layers = n_layers
        self.epochs = epochs
        self.batch_size = batch_size
        self.epoch_users = epoch_users
        self.lr_start = lr_start
        self.lr_end = lr_end
        self.temperature_start = temperature_start
        self.temperature_end = temperature_end
        self.calibrate = calibrate
        self.device = device
        self.n_threads = n_threads
        self.random_state = random_state

    # ------------------------------------------------------------------ checks

    def _check_params(self) -> None:
        """Check the hyper-parameters (``fit`` does; ``explain`` before any work)."""
        for name in ("n_rules", "hidden_size", "n_layers", "epochs"):
            check_whole(getattr(self, name), name, min_value=1)
        check_whole(self.batch_size, "batch_size", min_value=2)
        check_whole(self.epoch_users, "epoch_users", min_value=2, allow_none=True)
        check_whole(self.n_threads, "n_threads", min_value=1, allow_none=True)
        for name in ("lr_start", "lr_end", "temperature_start", "temperature_end"):
            check_real(getattr(self, name), name, min_value=0.0, include_min=False)
        check_random_state_seed(self.random_state)

    def _layer_sizes(self, n_features: int) -> list[tuple[int, int, int, bool]]:
        """(inputs, conjunctions, disjunctions, skip) per logical layer."""
        sizes = []
        width = 2 * n_features + 2
        for _ in range(self.n_layers - 1):
            sizes.append((width, self.hidden_size, self.hidden_size, True))
            width += 2 * self.hidden_size
        n_conj = (self.n_rules + 1) // 2
        sizes.append((width, n_conj, self.n_rules - n_conj, False))
        return sizes

    # ------------------------------------------------------------------ torch

    @staticmethod
    def _forward(torch, z, logits, layers):
        """Rule units of the network at temperature zero, shape (batch, n_rules).

        ``logits[l]`` has one row per pick (two per neuron, neuron-major);
        each pick is the input at its arg-max.
        """
        h = z
        for W, (_, n_conj, _, skip) in zip(logits, layers):
            picked = h.index_select(1, W.argmax(-1))
            a, b = picked[:, 0::2], picked[:, 1::2]
            conj = a[:, :n_conj] * b[:, :n_conj]
            disj = 1 - (1 - a[:, n_conj:]) * (1 - b[:, n_conj:])
            h = torch.cat((conj, disj, h) if skip else (conj, disj), dim=1)
        return h

    def fit(
        self,
        X: ArrayLike,
        y: ArrayLike,
        progress: Callable[[FitProgress], Any] | None = None,
        should_stop: Callable[[], bool] | None = None,
    ) -> GSNLN:
        """Train the network to order users as the teacher does.

        Parameters
        ----------
        X : array-like of bool, shape (n_users, n_literals)
            The literal matrix, e.g. ``literals.transform(seqs)``.
        y : array-like of shape (n_users,)
            Teacher scores.
        progress : callable, optional
            Called after every epoch with a :class:`FitProgress`. Returning
            ``False`` stops training there: the network keeps what it learned
            so far and ``n_epochs_run_`` says how far it got. An exception
            raised by the callback propagates and leaves the student unfitted.
        should_stop : callable, optional
            Asked before every mini-batch (an epoch can take seconds); when it
            returns True training stops there, as when ``progress`` returns
            ``False``: a cancel is honoured within one mini-batch.

        Returns
        -------
        self
        """
        import torch

        self._check_params()
        Xb = check_binary_matrix(X)
        yv = check_target(y, Xb.shape[0])
        previous_threads = torch.get_num_threads()
        previous_flush = _flushes_denormals(torch)
        if self.n_threads is not None:
            torch.set_num_threads(int(self.n_threads))
        # As the temperature falls the soft samples hold subnormal floats,
        # which make CPU arithmetic several times slower; they are far below
        # anything that moves a pick, so they are flushed to zero while fitting.
        torch.set_flush_denormal(True)
        try:
            return self._fit(torch, Xb, yv, progress, should_stop)
        finally:
            torch.set_num_threads(previous_threads)
            torch.set_flush_denormal(previous_flush)

    def _fit(self, torch, Xb, yv, progress, should_stop=None) -> GSNLN:
        n_users, n_features = Xb.shape
        layers = self._layer_sizes(n_features)
        device = torch.device(self.device)
        seed = 0 if self.random_state is None else int(self.random_state)
        # Every random number is drawn on the CPU and moved to the device, so
        # that one seed gives one run whatever the device: initialization and
        # mini-batch order from torch's CPU generator, Gumbel noise from numpy's
        # (PCG64 draws uniforms about twice as fast as torch's CPU generator).
        init_gen = torch.Generator().manual_seed(seed)
        gen = torch.Generator().manual_seed(seed)
        np_gen = np.random.default_rng(seed)

        # All parameters live in one flat buffer (views per layer), so that
        # Adam is a handful of whole-buffer operations per step.
        shapes = [(2 * (nc + nd), n_in) for n_in, nc, nd, _ in layers] + [(self.n_rules,)]
        sizes = [int(np.prod(sh)) for sh in shapes]
        offsets = np.concatenate(([0], np.cumsum(sizes)))
        flat = torch.empty(int(offsets[-1]))
        views = [flat[o : o + n].view(sh) for o, n, sh in zip(offsets, sizes, shapes)]
        # selection logits ~ N(0, 1), rule weights ~ U(-1/sqrt(R), 1/sqrt(R)), as the research code
        for v in views[:-1]:
            v.copy_(torch.randn(v.shape, generator=init_gen))
        views[-1].copy_((torch.rand(self.n_rules, generator=init_gen) * 2 - 1) / np.sqrt(self.n_rules))
        flat = flat.to(device)
        grad = torch.zeros_like(flat)
        params = [flat[o : o + n].view(sh) for o, n, sh in zip(offsets, sizes, shapes)]
        grads = [grad[o : o + n].view(sh) for o, n, sh in zip(offsets, sizes, shapes)]
        logits, w = params[:-1], params[-1]
        adam = _Adam(torch, flat)
        masks = _neuron_masks(torch, layers, device)

        Xt = torch.from_numpy(Xb).to(device=device, dtype=torch.float32)
        ones = torch.ones(n_users, 1, device=device)
        z0 = torch.cat((Xt, 1 - Xt, ones, 0 * ones), dim=1)  # input layer (z, 1 - z, 1, 0)
        del Xt, ones
        yt = torch.from_numpy(yv).to(device=device, dtype=torch.float32)
        epoch_scores = torch.zeros(n_users, device=device)
        bs = self.batch_size
        # the users of one epoch: the first of a fresh permutation each epoch, all of them when few
        per_epoch = n_users if self.epoch_users is None else min(n_users, int(self.epoch_users))
        starts = [lo for lo in range(0, per_epoch, bs) if min(lo + bs, per_epoch) - lo >= 2]
        # Gumbel noise is drawn for many mini-batches in one call: per-call
        # overhead, not arithmetic, dominates with tensors this small.
        chunk = max(1, int(2**23 // sum(W.numel() for W in logits)))

        loss_curve: list[float] = []
        start = time.perf_counter()
        epochs_run = 0
        stopped = False
        for epoch in range(self.epochs):
            lr = _linear_schedule(self.lr_start, self.lr_end, epoch, self.epochs)
            tau = _linear_schedule(self.temperature_start, self.temperature_end, epoch, self.epochs)
            perm = torch.randperm(n_users, generator=gen).to(device)
            loss_sum = torch.zeros((), device=device)
            for c0 in range(0, len(starts), chunk):
                batch_starts = starts[c0 : c0 + chunk]
                noise = [
                    _scaled_gumbel(torch, (len(batch_starts),) + tuple(W.shape), tau, np_gen, device)
                    for W in logits
                ]
                for k, lo in enumerate(batch_starts):
                    if should_stop is not None and should_stop():
                        stopped = True
                        break
                    idx = perm[lo : min(lo + bs, per_epoch)]
                    loss, s = _loss_and_grads(
                        torch, z0.index_select(0, idx), yt.index_select(0, idx), logits, w,
                        [g[k] for g in noise], tau, layers, grads, masks,
                    )
                    adam.step(grad, lr)
                    loss_sum += loss
                    epoch_scores[idx] = s
                if stopped:
                    break
            if stopped:
                break  # a part epoch: not counted, its loss not recorded
            epochs_run = epoch + 1
            mean_loss = float(loss_sum) / max(len(starts), 1)
            loss_curve.append(mean_loss)
            if progress is not None:
                seen = perm[:per_epoch].cpu().numpy()  # the users this epoch scored
                info = FitProgress(
                    epoch=epochs_run,
                    epochs=self.epochs,
                    loss=mean_loss,
                    fidelity=fidelity(yv[seen], epoch_scores.cpu().numpy().astype(np.float64)[seen]),
                    temperature=tau,
                    learning_rate=lr,
                    seconds=time.perf_counter() - start,
                )
                if progress(info) is False:
                    break

        self.n_features_in_ = n_features
        self.logits_ = [
            W.cpu().numpy().reshape(nc + nd, 2, n_in).copy()
            for W, (n_in, nc, nd, _) in zip(logits, layers)
        ]
        self.selections_ = [W.argmax(-1) for W in self.logits_]
        self.n_conjunctions_ = [nc for _, nc, _, _ in layers]
        self.layers_ = layers
        raw_w = w.cpu().numpy().astype(np.float64)
        scale, shift = 1.0, 0.0
        if self.calibrate:
            units = self._rule_units(Xb)
            s = units @ raw_w
            if np.ptp(s) > 0:
                a, b = np.polyfit(s, yv, 1)
                if a > 0:
                    scale, shift = float(a), float(b)
                else:
                    shift = float(np.mean(yv) - np.mean(s))
            else:
                shift = float(np.mean(yv) - s[0])
        self.weights_ = raw_w * scale
        self.intercept_ = shift
        self.loss_curve_ = loss_curve
        self.n_epochs_run_ = epochs_run
        self.fit_seconds_ = time.perf_counter() - start
        # predict's rules without names, made on first use (a cache: predict changes no attribute)
        self._plain_rules: dict[str, RuleSet] = {}
        return self

    # ----------------------------------------------------------- hard output

    def _rule_units(self, Xb: np.ndarray) -> np.ndarray:
        """The network's rule units at temperature zero, in numpy: (n, n_rules)."""
        h = np.concatenate(
            (Xb, ~Xb, np.ones((Xb.shape[0], 1), bool), np.zeros((Xb.shape[0], 1), bool)), axis=1
        )
        for sel, (_, n_conj, _, skip) in zip(self.selections_, self.layers_):
            a, b = h[:, sel[:, 0]], h[:, sel[:, 1]]
            out = np.concatenate(
                (a[:, :n_conj] & b[:, :n_conj], a[:, n_conj:] | b[:, n_conj:]), axis=1
            )
            h = np.concatenate((out, h), axis=1) if skip else out
        return h.astype(np.float64)

    def decision_function(self, X: ArrayLike) -> np.ndarray:
        """The trained network's hard output (temperature zero), via torch.

        What :meth:`rules` must reproduce; computed by the network itself (in
        float32) so the two can be checked against each other.

        Parameters
        ----------
        X : array-like of bool, shape (n_users, n_literals)

        Returns
        -------
        ndarray of float64, shape (n_users,)
        """
        import torch

        self._check_fitted()
        Xb = check_binary_matrix(X)
        self._check_width(Xb)
        with torch.no_grad():
            Xt = torch.from_numpy(Xb).to(torch.float32)
            ones = torch.ones(Xt.shape[0], 1)
            z0 = torch.cat((Xt, 1 - Xt, ones, 0 * ones), dim=1)
            logits = [torch.from_numpy(W.reshape(-1, W.shape[-1])) for W in self.logits_]
            units = self._forward(torch, z0, logits, self.layers_)
            w = torch.from_numpy(self.weights_.astype(np.float32))
            return (units @ w).numpy().astype(np.float64) + self.intercept_

    def _check_width(self, Xb: np.ndarray) -> None:
        if Xb.shape[1] != self.n_features_in_:
            raise InputError(
                f"X has {Xb.shape[1]} literals, the student was fitted on {self.n_features_in_}"
            )

    # ----------------------------------------------------------------- rules

    def formulas(self) -> list[Formula]:
        """Each rule unit as an (unsimplified) formula over literal indices."""
        self._check_fitted()
        p = self.n_features_in_
        units: list[Formula] = [*(Lit(i) for i in range(p)), *(Lit(i, True) for i in range(p)), TRUE, FALSE]
        for sel, (_, n_conj, _, skip) in zip(self.selections_, self.layers_):
            out: list[Formula] = []
            for k, (i, j) in enumerate(sel):
                op = And if k < n_conj else Or
                out.append(op((units[i], units[j])))
            units = out + units if skip else out
        return units

    def rules(self, literals: Any = None) -> RuleSet:
        """The trained network as a simplified :class:`RuleSet`.

        Parameters
        ----------
        literals : Literals or list of str, optional
            The literal table ``X`` came from (names, and the statistic output
            and threshold behind each literal, so literals on one output can
            be merged). Without it literals are named ``x0, x1, ...``.

        Returns
        -------
        RuleSet
            Scores every user exactly as :meth:`decision_function` does (up
            to float rounding), for literal matrices produced by ``literals``.
        """
        self._check_fitted()
        info = literal_info(literals, self.n_features_in_)
        if info.n_literals != self.n_features_in_:
            raise InputError(
                f"the literal table has {info.n_literals} literals, the student was fitted on "
                f"{self.n_features_in_}"
            )
        return RuleSet.from_formulas(
            self.formulas(), self.weights_, self.intercept_,
            literals=literals, n_literals=self.n_features_in_,
        )

    def predict(self, X: ArrayLike) -> np.ndarray:
        """Rule scores for the rows of the literal matrix ``X`` (numpy only).

        Parameters
        ----------
        X : array-like of bool, shape (n_users, n_literals)

        Returns
        -------
        ndarray of float64, shape (n_users,)
        """
        self._check_fitted()
        Xb = check_binary_matrix(X)
        self._check_width(Xb)
        if "rules" not in self._plain_rules:
            self._plain_rules["rules"] = self.rules()
        return self._plain_rules["rules"].score(Xb)
