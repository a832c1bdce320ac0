"""The static HTML copy of an explanation: what a notebook shows without its kernel."""

import threading
from types import SimpleNamespace

import IPython.display
import pytest
from tiny import tiny_payments

import rudi_explain as rx
from rudi_explain.views.static_view import static_html

EVIL = "<img src=x onerror=alert(1)>"


@pytest.fixture(scope="module")
def exp():
    demo = rx.datasets.make_payments(600, random_state=2)
    return rx.explain(None, demo.events, scores=demo.risk, background=False, n_stats=3, n_rules=10,
                      n_simulations=30, student_params={"epochs": 20})


def test_without_a_pruning_path_there_is_no_curve():
    html = static_html(tiny_payments(300))
    assert "rules over" in html and "against the number of rules" not in html


def test_the_copy_has_the_summary_rules_in_words_and_the_curve(exp):
    html = static_html(exp)
    r = exp.report()
    assert f"{r['fidelity_test']:.3f}" in html and f"{r['n_test']:,} held-out users" in html
    assert r["fidelity_meaning"][:40] in html
    from html import escape

    for rule in exp.rules.rules:
        assert escape(rule.text) in html
    curve = exp.fidelity_curve
    assert html.count("<td style=\"text-align: center") == len(curve)
    default = curve[curve["default"]].iloc[0]
    assert f"font-weight: bold\">{int(default.n_rules)}<br>{default.fidelity_test:.3f}" in html
    assert "<script" not in html and "re-run the cell" in html


def test_everything_from_the_data_is_escaped():
    # a rule text with markup, through a rule set named by hand: the copy must show it as text
    from rudi_explain.rules.formula import And, Lit
    from rudi_explain.rules.ruleset import RuleSet

    names = [f"total amount where merchant_category is {EVIL} > 40", "share of events abroad > 0.1"]
    rules = RuleSet.from_formulas([And((Lit(0),)), And((Lit(0), Lit(1)))], [0.5, -0.25], 0.1, literals=names)

    class Fake:
        status, progress, error, pruning = "done", None, None, None

        def __init__(self, rules):
            self.rules = rules
            self.result = SimpleNamespace(rules=rules, fires=None)

        def report(self):
            return {"fidelity_test_ci": (0.8, 0.9), "n_rules": 2, "n_statistics": 2, "teacher": EVIL,
                    "n_users": 10, "fidelity_test": 0.85, "n_test": 2, "fidelity_meaning": EVIL,
                    "score_unit": EVIL}

    html = static_html(Fake(rules))
    assert EVIL not in html and "&lt;img src=x onerror=alert(1)&gt;" in html
    assert html.count("&lt;img") == 5  # two rules, teacher, meaning, unit
    failed = Fake(rules)
    failed.status, failed.error = "failed", ValueError(EVIL)
    html = static_html(failed)
    assert EVIL not in html and "failed" in html and "ValueError" in html


@pytest.mark.slow
def test_display_shows_the_copy_then_the_widget_and_redoes_the_copy_when_the_job_ends(monkeypatch):
    shown, updated = [], []
    monkeypatch.setattr(IPython.display, "display", lambda obj, **kw: shown.append((obj, kw)))
    monkeypatch.setattr(IPython.display, "update_display", lambda obj, **kw: updated.append((obj, kw)))
    demo = rx.datasets.make_payments(500, random_state=4)
    gate = threading.Event()

    def slow(seqs):
        gate.wait(30)
        return demo.risk.reindex(seqs.users).to_numpy()

    e = rx.explain(slow, demo.events, background="thread", n_stats=3, n_rules=6, n_simulations=30,
                   student_params={"epochs": 20})
    e._ipython_display_()
    (copy, kw), (widget, _) = shown
    assert "running" in copy["text/html"] and kw["raw"] and kw["display_id"].startswith("rudi-explain-")
    assert type(widget).__name__ == "ExplanationWidget"
    gate.set()
    e.wait(timeout=120)
    assert len(updated) == 1
    final, ukw = updated[0]
    assert ukw["display_id"] == kw["display_id"]
    from html import escape

    assert all(escape(rule.text) in final["text/html"] for rule in e.rules.rules)
    assert final["text/plain"] == repr(e) and "fidelity" in final["text/plain"]


@pytest.mark.kernel
@pytest.mark.slow
def test_a_notebook_exported_without_a_kernel_shows_the_final_rules(tmp_path):
    """The job runs in the kernel's background thread and ends after its cell: the copy in the saved
    notebook is the final one, and nbconvert's HTML (no kernel, no widget manager) shows the rules."""
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    nbconvert = pytest.importorskip("nbconvert")
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(src) for src in (
        "import rudi_explain as rx\n"
        "demo = rx.datasets.make_payments(600, random_state=2)\n"
        "exp = rx.explain(None, demo.events, scores=demo.risk, background='thread', n_stats=3, n_rules=10,\n"
        "                 n_simulations=30, student_params={'epochs': 20})\n"
        "exp",
        "exp.wait(timeout=300)\nimport json\n"
        "print(json.dumps([r.text for r in exp.rules.rules]))",
    )]
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbclient.NotebookClient(nb, timeout=600, kernel_name="python3",
                            resources={"metadata": {"path": str(tmp_path)}}).execute()
    import json

    texts = json.loads(nb.cells[1].outputs[0]["text"])
    first = nb.cells[0].outputs
    copies = [o for o in first if "text/html" in o.get("data", {})]
    assert len(copies) == 1 and "rudi-explain-static" in copies[0]["data"]["text/html"]
    assert "rudi-explain: running" not in copies[0]["data"]["text/html"]  # replaced when the job ended
    html, _ = nbconvert.HTMLExporter().from_notebook_node(nb)
    from html import escape

    assert texts and all(escape(t) in html for t in texts)
