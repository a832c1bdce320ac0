"""Fixtures for the real-browser tests: a JupyterLab server and a headless Chromium.

JupyterLab runs on 127.0.0.1 with a free port, a temporary root folder and
its settings, workspaces and runtime folders outside that root (so they do
not show in the file browser). Chromium is Debian's, driven by Playwright
(never ``playwright install``). Both are ended in teardown by process group.

The browser fixture is not named ``browser``: pytest-playwright, when
installed, owns that name.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path

import pytest

CHROMIUM = "/usr/bin/chromium"
TOKEN = "rudi-explain-test"
REPO = Path(__file__).resolve().parents[2]
SCREENSHOTS = REPO / "test-output" / "screenshots"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-dev-shm-usage",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]


def pytest_collection_modifyitems(config, items):
    reason = None
    if not Path(CHROMIUM).exists():
        reason = f"{CHROMIUM} is missing (make test installs Debian's chromium)"
    else:
        try:
            import jupyterlab  # noqa: F401
            import playwright  # noqa: F401
        except ImportError as err:
            reason = f"browser test packages are missing ({err.name}): pip install -e '.[test]'"
    if reason:
        for item in items:
            if Path(str(item.fspath)).resolve().is_relative_to(Path(__file__).resolve().parent):
                item.add_marker(pytest.mark.skip(reason=reason))


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _stop(proc: subprocess.Popen) -> None:
    """End a process we started, and its children, by its process group."""
    if proc.poll() is not None:
        return
    for sig, wait in ((signal.SIGTERM, 10), (signal.SIGKILL, 5)):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            return
        try:
            proc.wait(timeout=wait)
            return
        except subprocess.TimeoutExpired:
            continue


@dataclass
class Lab:
    url: str
    token: str
    root: Path
    log: Path

    def page_url(self, notebook: str) -> str:
        return f"{self.url}/lab/tree/{notebook}?token={self.token}&reset"

    def notebook7_url(self, notebook: str) -> str:
        """The same notebook in Notebook 7 (the ``notebook`` package's app, served by the same server)."""
        return f"{self.url}/notebooks/{notebook}?token={self.token}"


@pytest.fixture(scope="session")
def jupyter_lab(tmp_path_factory) -> Lab:
    root = tmp_path_factory.mktemp("lab-root")
    state = tmp_path_factory.mktemp("lab-state")  # not inside the served root
    settings = state / "settings"
    for rel, content in {
        "@jupyterlab/apputils-extension/notification.jupyterlab-settings": {"fetchNews": "false", "checkForUpdates": False},
        "@jupyter-widgets/jupyterlab-manager/plugin.jupyterlab-settings": {"saveState": True},
    }.items():
        (settings / rel).parent.mkdir(parents=True, exist_ok=True)
        (settings / rel).write_text(json.dumps(content))
    port = _free_port()
    env = dict(os.environ, JUPYTERLAB_SETTINGS_DIR=str(settings), JUPYTERLAB_WORKSPACES_DIR=str(state / "workspaces"),
               JUPYTER_RUNTIME_DIR=str(state / "runtime"), PYTHONPATH=str(REPO), OMP_NUM_THREADS="1",
               MKL_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1")
    for name in ("RUDI_EXPLAIN_BLOCK", "CI", "NBVAL", "PAPERMILL"):  # the kernel runs jobs as a user's does
        env.pop(name, None)
    cmd = [sys.executable, "-m", "jupyterlab", "--no-browser", "--allow-root", "--ServerApp.ip=127.0.0.1",
           f"--ServerApp.port={port}", "--ServerApp.port_retries=0", f"--IdentityProvider.token={TOKEN}",
           f"--ServerApp.root_dir={root}", "--LabApp.expose_app_in_browser=True", "--LabApp.news_url=None",
           "--JupyterNotebookApp.expose_app_in_browser=True",  # window.jupyterapp in Notebook 7 too
           "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate", "--LabApp.extension_manager=readonly"]
    log = state / "lab.log"
    with open(log, "wb") as out:
        proc = subprocess.Popen(cmd, env=env, stdout=out, stderr=subprocess.STDOUT, cwd=root, start_new_session=True)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"JupyterLab exited with {proc.returncode}:\n{log.read_text()[-3000:]}")
            try:
                with urllib.request.urlopen(f"{url}/api/status?token={TOKEN}", timeout=2) as r:
                    if r.status == 200:
                        break
            except OSError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError(f"JupyterLab did not answer within 60 s:\n{log.read_text()[-3000:]}")
            time.sleep(0.1)
        yield Lab(url, TOKEN, root, log)
    finally:
        _stop(proc)


class _Browser:
    """The launched Chromium, whose pages note when they crash (a crashed page answers no locator: a
    failure's report then says so instead of only timing out)."""

    def __init__(self, browser) -> None:
        self._browser = browser
        self.crashes: list[str] = []

    def new_page(self, **kwargs):
        page = self._browser.new_page(**kwargs)
        page.on("crash", lambda p: self.crashes.append(f"{time.strftime('%H:%M:%S')} {p.url}"))
        return page

    def __getattr__(self, name: str):
        return getattr(self._browser, name)


@pytest.fixture(scope="session")
def chromium():
    from playwright.sync_api import sync_playwright

    pw = sync_playwright().start()
    b = pw.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
    try:
        yield _Browser(b)
    finally:
        b.close()
        pw.stop()


def _kernels(lab: Lab, method: str = "GET", kernel: str = "") -> list[dict]:
    request = urllib.request.Request(f"{lab.url}/api/kernels{kernel}?token={lab.token}", method=method)
    with urllib.request.urlopen(request, timeout=10) as r:
        body = r.read()
    return json.loads(body) if body else []


def _what_ran(item) -> str:
    """What a failed browser test leaves to read: the server's log (the kernels' errors), its kernels, the
    pages that crashed, and the busiest processes (a kernel still computing slows all that follows)."""
    lines = []
    lab, browser = item.funcargs.get("jupyter_lab"), item.funcargs.get("chromium")
    if isinstance(browser, _Browser):
        lines.append(f"pages crashed: {browser.crashes or 'none'}")
    if isinstance(lab, Lab):
        try:
            lines += [f"kernel {k['id'][:8]} {k['execution_state']} since {k['last_activity']}" for k in _kernels(lab)]
        except OSError as err:
            lines.append(f"the server did not list its kernels: {err}")
        lines += ["--- lab.log, last 60 lines:"] + lab.log.read_text(errors="replace").splitlines()[-60:]
    ps = subprocess.run(["ps", "-eo", "pid,ppid,pcpu,rss,etime,args", "--sort=-pcpu"], capture_output=True, text=True)
    lines += ["--- busiest processes:"] + [line[:200] for line in ps.stdout.splitlines()[:12]]
    return "\n".join(lines)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    if report.when == "call" and report.failed and "jupyter_lab" in item.funcargs:
        report.sections.append(("what ran", _what_ran(item)))
        # A job a failed test left running in its kernel would slow the tests after it: stop it.
        lab = item.funcargs["jupyter_lab"]
        try:
            for k in _kernels(lab):
                if k["execution_state"] == "busy":
                    _kernels(lab, "POST", f"/{k['id']}/interrupt")
        except OSError:
            pass


@pytest.fixture(scope="session")
def small_report(tmp_path_factory) -> tuple[Path, list[dict]]:
    """A standalone report of a small fitted explanation, and its rules (text and weight).

    Fitted once for the tests that read a real report from file:// (test_report_links.py and
    test_widget_views_jupyterlab.py's downloads): all browser tests run in one pytest-xdist
    worker (tests/conftest.py), so the session fixture is built once.
    """
    import rudi_explain as rx

    demo = rx.datasets.make_payments(600, random_state=2)
    exp = rx.explain(None, demo.events, scores=demo.risk, labels=demo.labels, background=False, n_stats=3,
                     n_rules=8, n_simulations=30, student_params={"epochs": 20}, random_state=5)
    path = tmp_path_factory.mktemp("small-report") / "report.html"
    exp.to_html(path, n_users=5)
    return path, [{"text": str(r.text), "weight": float(r.weight)} for r in exp.rules]


_CELLS_SAID = """() => [...document.querySelectorAll('.jp-Cell')].map((cell, i) => {
    const prompt = cell.querySelector('.jp-InputPrompt')?.innerText.trim() ?? '';
    const widget = cell.querySelector('.rx-root');
    const said = widget ? `widget: ${widget.querySelector('.rx-status')?.innerText ?? '?'} | `
        + `${widget.querySelector('.rx-message')?.innerText ?? ''} | found ${widget.querySelectorAll('.rx-found-item').length}`
        : (cell.querySelector('.jp-OutputArea')?.innerText ?? '');
    return `cell ${i} ${prompt} ${said.slice(0, 300).replace(/\\s+/g, ' ')}`;
}).join('\\n')"""


def _cells_said(page) -> str:
    """Each cell's prompt and what its output says (a widget: its status, message and statistics found)."""
    try:
        return "\n" + page.evaluate(_CELLS_SAID)
    except Exception as err:  # a crashed or closed page: say so
        return f"the page did not answer: {err}"


@pytest.fixture()
def shots():
    """Save a full-page PNG of a page under test-output/screenshots/."""
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)

    def save(page, name: str, top=None) -> Path:
        """``top``: a locator scrolled to the top of its scrolling area first (JupyterLab
        scrolls the notebook inside the page, so a full-page shot shows only the viewport)."""
        if top is not None:
            top.evaluate("e => e.scrollIntoView({block: 'start'})")
            page.wait_for_timeout(150)  # let the scroll settle before the shot
        if name.startswith("failure"):  # the screenshot stays on the machine: say in words what it shows
            print(f"\n{name}: " + _cells_said(page))
        path = SCREENSHOTS / f"{name}.png"
        page.screenshot(path=str(path), full_page=True)
        return path

    return save
