"""Suite-wide settings: one thread for torch and BLAS, and how ``make test`` splits the suite in two.

The models in these tests are small; on a 2-core machine shared with other
work, waking a second thread costs more than it saves, many times over.

``make test`` runs two pytest-xdist workers with ``--dist loadscope`` in
collection order (the browser tests first: the longest unit). The scheduler
below makes each test file one unit of work, so its module fixtures are built
once and a notebook's cells (nbval) run in order in one kernel. The browser
tests are one unit together: one JupyterLab server and one Chromium, and never
two browser jobs competing for the two cores. (xdist's own ``loadgroup`` marks
do nothing under pytest 9, which no longer reads the node id xdist rewrites.)
"""

from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


def pytest_collection_modifyitems(config, items):
    """Markers by place (declared in pyproject.toml; ``make test-fast`` leaves out all four).

    Every test in tests/browser/ drives JupyterLab in Chromium, and each starts kernels and takes
    many seconds: ``browser``, ``kernel``, ``slow``. A notebook cell run by nbval runs in a kernel:
    ``notebook``, ``kernel``. The other ``slow`` and ``kernel`` marks sit on the tests themselves.
    """
    browser = REPO / "tests" / "browser"
    for item in items:
        path = Path(str(item.fspath)).resolve()
        if path.is_relative_to(browser):
            for mark in (pytest.mark.browser, pytest.mark.kernel, pytest.mark.slow):
                item.add_marker(mark)
        elif path.suffix == ".ipynb":
            item.add_marker(pytest.mark.notebook)
            item.add_marker(pytest.mark.kernel)


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config, log):
    if config.getvalue("dist") != "loadscope":
        return None
    from xdist.scheduler import LoadScopeScheduling

    class ByFileBrowserTogether(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            path = nodeid.split("::", 1)[0]
            return "tests/browser" if path.startswith("tests/browser/") else path

    return ByFileBrowserTogether(config, log)


@pytest.fixture(autouse=True, scope="session")
def _one_thread():
    import torch
    from threadpoolctl import threadpool_limits

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    with threadpool_limits(1):
        yield
    torch.set_num_threads(threads)
