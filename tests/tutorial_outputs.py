"""Keep the committed tutorials' outputs true: re-run them, and strip stale widget state (issue 28, items 5-6).

A notebook run headless (nbclient, nbconvert) stores every widget's model in its metadata
(``application/vnd.jupyter.widget-state+json``: the widget's JS, CSS and data, hundreds of kB)
and a widget-view output that points at it. Reopened in JupyterLab, whose default is not to
restore saved widget state, such an output shows "Error displaying widget: model not found";
the static ``text/html`` copy the explanation displays just above it (what GitHub and nbconvert
show) is what the reader should meet. So the state is dropped, and with it every widget-view
output whose model is then gone: the whole output where the cell keeps a static copy, else
only its widget-view entry (the plain-text repr stays).

Run from the repository root, with the project's virtualenv::

    RUDI_EXPLAIN_BLOCK=1 .venv/bin/python tests/tutorial_outputs.py --execute notebooks/*.ipynb
    .venv/bin/python tests/tutorial_outputs.py notebooks/*.ipynb      # strip only

``tests/test_notebook_state.py`` checks the committed notebooks with :func:`widget_problems`.
The kernels run with the numeric kernels held to AVX2, as ``make test`` runs them
(``tests/golden/demo_golden.PINNED``): the rules a notebook prints are then those any x86-64 CPU gives.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

import nbformat

WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
WIDGET_STATE = "application/vnd.jupyter.widget-state+json"
STATIC_COPY = "rudi-explain-static"  # the class of the explanation's static copy (rudi_explain/views/static_view.py)


def saved_models(nb: Any) -> set[str]:
    """The model ids whose state the notebook's metadata holds."""
    return set(nb.metadata.get("widgets", {}).get(WIDGET_STATE, {}).get("state", {}))


def has_static_copy(cell: Any) -> bool:
    """Whether a code cell's outputs hold the explanation's static ``text/html`` copy."""
    return any(STATIC_COPY in _text(o.get("data", {}).get("text/html", "")) for o in cell.get("outputs", []))


def widget_problems(nb: Any) -> list[str]:
    """What a reader reopening the notebook would meet: saved widget state, or a view of a model that is gone.

    Returns
    -------
    list of str
        One line per problem, naming the cell (empty when there is none).
    """
    problems = []
    if WIDGET_STATE in nb.metadata.get("widgets", {}):
        problems.append(f"the metadata holds widget state ({len(saved_models(nb))} models): strip it")
    models = saved_models(nb)
    for i, cell in enumerate(nb.cells):
        for out in cell.get("outputs", []):
            view = out.get("data", {}).get(WIDGET_VIEW)
            if view is not None and view.get("model_id") not in models:
                problems.append(f"cell {i}: a widget view of a model that is not saved "
                                "(JupyterLab shows 'Error displaying widget: model not found')")
            elif view is not None and not has_static_copy(cell):
                problems.append(f"cell {i}: a widget view with no static text/html copy beside it")
    return problems


def strip_widget_state(nb: Any) -> int:
    """Drop the saved widget state and the views of the models it held, in place.

    Returns
    -------
    int
        Outputs changed or dropped.
    """
    nb.metadata.pop("widgets", None)
    changed = 0
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        kept = []
        static = has_static_copy(cell)
        for out in cell.outputs:
            data = out.get("data", {})
            if WIDGET_VIEW in data:
                changed += 1
                if static:
                    continue  # the static copy above says it all
                del data[WIDGET_VIEW]
                if not data:
                    continue
            kept.append(out)
        cell.outputs = kept
    return changed


def execute(nb: Any, cwd: Path, timeout: int = 900) -> None:
    """Run every cell in a fresh kernel of this interpreter (nbclient), in place."""
    import os

    from nbclient import NotebookClient

    sys.path.insert(0, str(Path(__file__).parent / "golden"))
    from demo_golden import PINNED

    os.environ.update(PINNED)  # the kernel inherits them, before it loads numpy, OpenBLAS or PyTorch
    NotebookClient(nb, timeout=timeout, kernel_name="python3", resources={"metadata": {"path": str(cwd)}}).execute()


def _text(value: Any) -> str:
    return "".join(value) if isinstance(value, list) else str(value)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("notebooks", nargs="+", type=Path)
    parser.add_argument("--execute", action="store_true", help="re-run every cell first (set RUDI_EXPLAIN_BLOCK=1)")
    args = parser.parse_args(argv)
    for path in args.notebooks:
        nb = nbformat.read(path, as_version=4)
        if args.execute:
            execute(nb, path.parent)
        n = strip_widget_state(nb)
        nbformat.write(nb, path)
        print(f"{path}: {'executed, ' if args.execute else ''}{n} widget outputs stripped, "
              f"{path.stat().st_size / 1000:.0f} kB", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
