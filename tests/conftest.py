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


#: seconds over which a test that make test-fast runs is named at the end of the run
SLOW_SECONDS = 5.0
_unmarked_slow: list[tuple[float, str]] = []


def pytest_runtest_logreport(report):
    if report.when == "call" and report.duration > SLOW_SECONDS and not any(
            mark in report.keywords for mark in ("slow", "browser", "notebook", "kernel")):
        _unmarked_slow.append((report.duration, report.nodeid))


def pytest_terminal_summary(terminalreporter):
    """Name the tests without a ``slow`` mark that took more than SLOW_SECONDS (wall time, so a
    loaded machine names more): a hint to mark them, never a failure."""
    if _unmarked_slow:
        terminalreporter.section(f"over {SLOW_SECONDS:.0f} s without a slow mark (wall time; mark them if they are)")
        for seconds, nodeid in sorted(_unmarked_slow, reverse=True):
            terminalreporter.write_line(f"{seconds:6.1f}s  {nodeid}")


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
