"""Suite-wide settings: one thread for torch and BLAS, and how ``make test`` splits the suite in two.

The models in these tests are small; on a 2-core machine shared with other
work, waking a second thread costs more than it saves, many times over.

``make test`` runs two pytest-xdist workers with ``--dist loadgroup``. Each test
file is one unit of work, so its module fixtures are built once, and a
notebook's cells (nbval) run in order in one kernel. The browser tests are one
unit together: one JupyterLab server and one Chromium, and never two browser
jobs competing for the two cores.
"""

from pathlib import Path

import pytest

BROWSER = Path(__file__).resolve().parent / "browser"


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config, items):
    for item in items:
        path = Path(str(item.fspath)).resolve()
        group = "browser" if path.is_relative_to(BROWSER) else str(path)
        item.add_marker(pytest.mark.xdist_group(group))


@pytest.fixture(autouse=True, scope="session")
def _one_thread():
    import torch
    from threadpoolctl import threadpool_limits

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    with threadpool_limits(1):
        yield
    torch.set_num_threads(threads)
