"""The dashboard in a real Chromium (Debian's, driven by Playwright), over the real server and a
quickstart training on the local provider: the loss curve grows and the log follows while the job runs,
the jobs page sees RUNNING become SUCCEEDED without a reload, a paused job's buttons change, and every
page's screenshot (under the test's tmp directory) is not blank.

JSCTL_DASHBOARD_README_SHOT=1 also writes the job page's screenshot to docs/img/dashboard-job.png."""
from __future__ import annotations

import os
import struct
import zlib
from pathlib import Path

import pytest

from dashkit import cli, copy_quickstart, kill_jobs, require_browser, serving
from paths import ROOT
from pngcheck import colours

STEPS = "1000"  # long enough to watch it run (tens of seconds on two busy cores), short enough to wait for its end
START_S = 180  # torch's import and the rendezvous on a loaded machine
README_SHOT = Path(ROOT, "docs", "img", "dashboard-job.png")
LOADED = "window.__jsctlLoaded"  # set once after the page loads: still there means no reload since


@pytest.fixture(scope="module")
def browser():
    path = require_browser()
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        chromium = p.chromium.launch(executable_path=path, args=["--no-sandbox", "--disable-gpu"])
        yield chromium
        chromium.close()


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    """A workspace with the quickstart copied in and `jsctl dashboard --allow-actions` serving it."""
    require_browser()
    ws = tmp_path_factory.mktemp("dashboard")
    copy_quickstart(ws)
    try:
        with serving(ws, "--allow-actions") as served:
            yield ws, served
    finally:
        kill_jobs(ws)


@pytest.fixture
def page(browser, site):
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    page.errors = []
    page.on("pageerror", lambda error: page.errors.append(str(error)))
    page.goto(site[1].url + "/#/jobs")
    page.evaluate(f"{LOADED} = true")
    yield page
    page.close()


def shoot(page, path: Path, full_page: bool = True) -> Path:
    page.wait_for_timeout(300)  # the poll that was in flight lands
    page.screenshot(path=str(path), full_page=full_page)
    return path


def assert_not_blank(path: Path) -> None:
    seen = colours(path.read_bytes())
    assert seen.distinct >= 32 and seen.dominant_share < 0.97, (path.name, seen)


def points(page) -> int:
    return int(page.get_attribute("#chart-loss svg", "data-points"))


def test_the_blank_check_can_fail(tmp_path):
    """A uniform PNG (made here with zlib) is blank to assert_not_blank."""
    width, height = 64, 8
    raw = b"".join(b"\x00" + b"\xf6\xf7\xf9" * width for _ in range(height))
    chunk = lambda kind, body: struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))
    png = (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)) +
           chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b""))
    (tmp_path / "blank.png").write_bytes(png)
    assert colours(png).distinct == 1
    with pytest.raises(AssertionError):
        assert_not_blank(tmp_path / "blank.png")


def test_pages_follow_a_running_quickstart_without_a_reload(site, page, tmp_path):
    ws, _ = site
    code, _, err = cli(ws, "apply", "-f", "quickstart.yaml", "--auto-approve", "-v", f"STEPS={STEPS}")
    assert code == 0, err
    row = 'tr[data-address="job.quickstart"]'
    page.wait_for_selector(f'{row}[data-phase="RUNNING"]', timeout=START_S * 1000)

    # the job page (a hash route: the same document): the loss curve grows while the job runs
    page.click(f"{row} a.job-link")
    page.wait_for_function("() => +(document.querySelector('#chart-loss svg') || {dataset: {}}).dataset.points >= 2",
                           timeout=START_S * 1000)
    first = points(page)
    page.wait_for_function(f"() => +document.querySelector('#chart-loss svg').dataset.points > {first}",
                           timeout=60_000)
    assert page.get_attribute("#job-phase .phase", "data-phase") == "RUNNING"
    assert page.locator("#chart-loss polyline.line").count() >= 1

    # the log: the runtime's metric lines hidden until asked, then followed as they come
    assert page.locator("#job-log .line").count() >= 1
    assert page.locator("#job-log .line", has_text='{"jetstream"').count() == 0
    page.check("#log-metrics")
    page.wait_for_selector('#job-log .line:has-text("\\"jetstream\\": \\"metrics\\"")', timeout=30_000)
    last = int(page.locator("#job-log .line").last.get_attribute("data-n"))
    page.wait_for_function(f"() => +document.querySelector('#job-log .line:last-child').dataset.n > {last}",
                           timeout=60_000)
    at_bottom = page.evaluate("() => { const p = document.getElementById('job-log'); "
                              "return p.scrollHeight <= p.clientHeight || p.scrollTop + p.clientHeight >= p.scrollHeight - 4; }")
    assert at_bottom, "the log pane did not follow to its newest line"
    assert "following" in page.inner_text("#log-info")
    page.uncheck("#log-metrics")
    job_png = shoot(page, tmp_path / "job.png")
    if os.environ.get("JSCTL_DASHBOARD_README_SHOT") == "1":  # the top of the page, a longer curve
        page.wait_for_function("() => +document.querySelector('#chart-loss svg').dataset.points >= 60 || "
                               "document.querySelector('#job-phase .phase').dataset.phase !== 'RUNNING'", timeout=120_000)
        page.evaluate("window.scrollTo(0, 0)")
        README_SHOT.parent.mkdir(parents=True, exist_ok=True)
        shoot(page, README_SHOT, full_page=False)

    # back to the jobs page: RUNNING becomes SUCCEEDED by polling, the document never reloaded
    page.click('nav a[data-nav="jobs"]')
    page.wait_for_selector(f'{row}[data-phase="SUCCEEDED"]', timeout=START_S * 1000)
    assert page.evaluate(LOADED) is True
    jobs_png = shoot(page, tmp_path / "jobs.png")

    page.click('nav a[data-nav="clusters"]')
    page.wait_for_selector('.card.cluster[data-cluster="local"] tr[data-address="job.quickstart"]')
    clusters_png = shoot(page, tmp_path / "clusters.png")

    page.click('nav a[data-nav="cost"]')
    page.wait_for_selector('#cost-rows tr[data-address="job.quickstart"]')
    page.wait_for_selector("#cost-chart svg polyline", state="attached")  # flat at $0: no height
    cost_png = shoot(page, tmp_path / "cost.png")

    assert page.evaluate(LOADED) is True
    assert page.errors == []
    for png in (job_png, jobs_png, clusters_png, cost_png):
        assert_not_blank(png)


def test_a_paused_jobs_buttons_change(site, page, tmp_path):
    ws, _ = site
    copy_quickstart(ws, "pausable")
    code, _, err = cli(ws, "apply", "-f", "pausable.yaml", "--auto-approve", "-v", "STEPS=100000")
    assert code == 0, err
    page.goto(site[1].url + "/#/job/job.pausable")
    page.evaluate(f"{LOADED} = true")
    # running, and its runtime up (a metric line: it checkpoints on SIGUSR1 from here on)
    page.wait_for_function("() => +(document.querySelector('#chart-loss svg') || {dataset: {}}).dataset.points >= 1",
                           timeout=START_S * 1000)
    actions = "#job-actions button"
    page.wait_for_selector('#job-actions button[data-action="pause"]:enabled')
    assert page.locator(f'{actions}[data-action="resume"]').count() == 0

    page.click('#job-actions button[data-action="pause"]')
    page.wait_for_selector('#job-actions button[data-action="resume"]:enabled', timeout=120_000)
    assert page.locator(f'{actions}[data-action="pause"]').count() == 0
    assert page.get_attribute("#job-phase .phase", "data-phase") == "PAUSED"
    assert "Paused job.pausable" in page.inner_text("#job-msg")
    paused_png = shoot(page, tmp_path / "job-paused.png")

    page.click('#job-actions button[data-action="resume"]')
    page.wait_for_selector('#job-phase .phase[data-phase="RUNNING"]', timeout=120_000)
    page.wait_for_selector('#job-actions button[data-action="pause"]:enabled')

    page.once("dialog", lambda dialog: dialog.accept())  # "Stop job.pausable?"
    page.click('#job-actions button[data-action="stop"]')
    page.wait_for_selector('#job-phase .phase[data-phase="CANCELLED"]', timeout=60_000)
    page.wait_for_function("() => document.querySelectorAll('#job-actions button').length === 0")
    assert page.evaluate(LOADED) is True
    assert page.errors == []
    assert_not_blank(paused_png)


def test_a_workflow_is_drawn_as_its_dag_and_filtered(site, page, tmp_path):
    ws, _ = site
    for name in ("prep", "train", "report"):
        (ws / f"{name}.yaml").write_text(f"version: jetstream.v1\njob:\n  name: {name}\n"
                                         f"lifecycle:\n  command: ['{'false' if name == 'train' else 'true'}']\n")
    (ws / "flow.yaml").write_text("version: jetstream.v1\nworkflow:\n  name: flow\n  jobs:\n"
                                  "    - {name: prep, spec: prep.yaml}\n"
                                  "    - {name: train, spec: train.yaml, dependsOn: [prep]}\n"
                                  "    - {name: report, spec: report.yaml, dependsOn: [train]}\n")
    code, out, err = cli(ws, "apply", "-f", "flow.yaml", "--auto-approve")
    assert code == 1 and "workflow.flow.job.report: not submitted" in out + err, out + err  # train failed
    dag = 'svg.dag[data-workflow="flow"]'
    node = lambda job, phase: f'{dag} a[data-address="workflow.flow.job.{job}"][data-phase="{phase}"]'
    page.wait_for_selector(node("prep", "SUCCEEDED"), timeout=60_000)
    page.wait_for_selector(node("train", "FAILED"), timeout=60_000)
    report = page.get_attribute(f'{dag} a[data-address="workflow.flow.job.report"]', "data-phase")
    assert report not in ("SUCCEEDED", "FAILED", "RUNNING"), report
    assert page.locator(f"{dag} path.edge").count() == 2
    fills = {job: page.eval_on_selector(f'{dag} a[data-address="workflow.flow.job.{job}"] rect',
                                        "r => getComputedStyle(r).fill") for job in ("prep", "train", "report")}
    assert len(set(fills.values())) == 3, fills  # each phase its own colour

    page.select_option("#f-workflow", "flow")
    page.wait_for_function("() => [...document.querySelectorAll('#jobs-table tbody tr[data-address]')]"
                           ".every(r => r.dataset.address.startsWith('workflow.flow.'))")
    assert page.locator("#jobs-table tbody tr[data-address]").count() == 3
    page.select_option("#f-phase", "FAILED")
    page.wait_for_function("() => document.querySelectorAll('#jobs-table tbody tr[data-address]').length === 1")
    assert page.get_attribute("#jobs-table tbody tr[data-address]", "data-address") == "workflow.flow.job.train"
    assert_not_blank(shoot(page, tmp_path / "jobs-workflow.png"))
    assert page.errors == []
