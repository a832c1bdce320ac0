"""Every CUDA path, against the same work on the CPU: a teacher whose module sits on a GPU, the event
attributions through it (cuDNN's RNN backward needs training mode: given to recurrent layers without
dropout, else cuDNN is switched off), the demo GRU trained on a GPU, and explain() over a GPU teacher.

Skipped without a CUDA device (CI has none); run on a lent GPU machine. GS-NLN's own CUDA test is in
tests/students/test_gsnln.py.
"""

import copy

import numpy as np
import pytest
import torch

import rudi_explain as rx
from rudi_explain.audit.attributions import attribute_events
from rudi_explain.teachers.adapters import as_teacher, encode_padded
from rudi_explain.teachers.demo_gru import train_demo_gru

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device")

MAX_LEN = 16


@pytest.fixture(scope="module")
def payments():
    data = rx.datasets.make_payments(600, random_state=5)
    return data, data.sequences()


def _trained(payments, dropout: float, hidden_size: int = 8, epochs: int = 2):
    data, seqs = payments
    return train_demo_gru(seqs, data.labels, hidden_size=hidden_size, epochs=epochs, max_len=MAX_LEN,
                          dropout=dropout, random_state=0)


def _on_gpu(model):
    return copy.deepcopy(model).to("cuda")


@pytest.mark.parametrize("dropout", [0.0, 0.1])
def test_a_gpu_teacher_scores_as_the_same_module_on_the_cpu(payments, dropout):
    _, seqs = payments
    cpu = _trained(payments, dropout)
    gpu = _on_gpu(cpu)
    gpu.train()  # the caller's mode: restored after scoring
    expected = as_teacher(cpu).score(seqs)
    got = as_teacher(gpu).score(seqs)
    np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-5)
    assert all(m.training for m in gpu.modules())
    assert next(gpu.parameters()).device.type == "cuda"
    # Batches of another size, on the GPU: the same scores.
    np.testing.assert_allclose(as_teacher(gpu, batch_size=7).score(seqs), got, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("dropout", [0.0, 0.1])
def test_integrated_gradients_on_a_gpu_equal_the_cpu_and_stay_complete(payments, dropout):
    _, seqs = payments
    cpu = _trained(payments, dropout)
    gpu = _on_gpu(cpu)
    idx = np.arange(0, 600, 20)  # 30 users, some with more events than the module reads
    on_cpu = attribute_events(cpu, seqs, idx, "integrated_gradients", batch_size=7)
    on_gpu = attribute_events(gpu, seqs, idx, "integrated_gradients", batch_size=7)
    np.testing.assert_allclose(on_gpu.score, on_cpu.score, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(on_gpu.reference, on_cpu.reference, rtol=1e-4, atol=1e-5)
    assert (np.isnan(on_gpu.attribution) == np.isnan(on_cpu.attribution)).all()
    scale = np.nanmax(np.abs(on_cpu.attribution))
    np.testing.assert_allclose(np.nan_to_num(on_gpu.attribution), np.nan_to_num(on_cpu.attribution),
                               atol=1e-3 * scale + 1e-6)
    # Completeness on the GPU: the attributions add up to the score change.
    total = np.bincount(on_gpu.segment, weights=np.nan_to_num(on_gpu.attribution), minlength=len(idx))
    change = on_gpu.score - on_gpu.reference
    assert (np.abs(total - change) <= 0.02 * np.abs(change) + 2e-3).all()
    # The module's modes and cuDNN's flag are the caller's again.
    assert not any(m.training for m in gpu.modules())
    assert torch.backends.cudnn.enabled


def test_ablation_on_a_gpu_is_the_score_change_when_one_event_is_padded_out(payments):
    _, seqs = payments
    gpu = _on_gpu(_trained(payments, 0.1))
    idx = np.array([2, 9, 41])
    batch = attribute_events(gpu, seqs, idx, "ablation")
    sub = seqs.subset(idx)
    cat, num, lengths = encode_padded(sub, None, MAX_LEN, vocabularies=gpu.vocabularies_)
    cat, num, lengths = cat.cuda(), num.cuda(), lengths.cuda()
    with torch.no_grad():
        full = gpu(cat, num, lengths).double().cpu().numpy()
        for b in range(len(idx)):
            n, read = seqs.lengths[idx[b]], int(lengths[b])
            got = batch.attribution[batch.segment == b][n - read:]
            for t in range(read):
                c, x = cat.clone(), num.clone()
                c[b, t], x[b, t] = 0, 0.0
                assert got[t] == pytest.approx(full[b] - gpu(c, x, lengths).double().cpu().numpy()[b], abs=1e-4)


def test_the_demo_gru_trains_on_a_gpu_as_well_as_on_the_cpu(payments):
    data, seqs = payments
    from sklearn.metrics import roc_auc_score

    labels = data.labels.reindex(seqs.users).to_numpy()
    aucs = {}
    for device in ("cpu", "cuda"):
        model = train_demo_gru(seqs, data.labels, hidden_size=16, epochs=4, max_len=MAX_LEN, random_state=0,
                               device=device)
        aucs[device] = roc_auc_score(labels, as_teacher(model).score(seqs))
    # Same seed, same batches: the GPU run differs from the CPU run by float rounding and cuDNN's kernels,
    # so its training fit is about the same, and clearly better than chance.
    assert aucs["cuda"] >= aucs["cpu"] - 0.03, aucs
    assert aucs["cuda"] >= 0.6, aucs


def test_explain_over_a_gpu_teacher_equals_explain_over_its_cpu_copy(payments):
    _, seqs = payments
    cpu = _trained(payments, 0.1, hidden_size=16, epochs=4)  # scores that depend on the events
    gpu = _on_gpu(cpu)
    kw = dict(n_stats=3, n_rules=4, max_depth=2, random_state=0, background=False, progress=False)
    on_gpu = rx.explain(gpu, seqs, **kw)
    on_cpu = rx.explain(cpu, seqs, **kw)
    np.testing.assert_allclose(on_gpu.result.teacher_scores.to_numpy(), on_cpu.result.teacher_scores.to_numpy(),
                               rtol=1e-4, atol=1e-5)
    assert next(gpu.parameters()).device.type == "cuda"
    # The teacher's scores agree to float rounding; the rules are learnt from them, so a fidelity
    # on the same held-out users within a hair of the CPU run's.
    assert abs(on_gpu.report()["fidelity_test"] - on_cpu.report()["fidelity_test"]) <= 0.02
    # The drill-down's attributions (integrated gradients) run through the GPU teacher, as on the CPU.
    user = seqs.users[int(np.argmax(seqs.lengths))]
    got, expected = on_gpu.user(user).attributions, on_cpu.user(user).attributions
    assert got.method == expected.method == "integrated_gradients"
    assert got.score == pytest.approx(expected.score, rel=1e-4, abs=1e-5)
