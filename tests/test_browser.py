"""The built site in headless Chromium with networking off: charts render, no console errors, no
failed request, navigation resolves, a screenshot per page, and user strings stay text.

Uses Debian's chromium (/usr/bin/chromium) driven by Playwright (never `playwright install`, which
downloads a browser). The site is the preview site; the Quarto book is checked the same way when
Quarto is on PATH (tests/test_report.py renders it).
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
XSS = "<img src=x onerror=alert(1)>"


@pytest.fixture(scope="module")
def browser():
    if CHROMIUM is None:
        pytest.skip("Debian chromium not installed (apt-get install chromium; .ci/run installs it)")
    sync_api = pytest.importorskip(
        "playwright.sync_api", reason="playwright not installed (dev extra)"
    )
    with sync_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox", "--disable-gpu"])
        yield b
        b.close()


def _visit(browser, page_path: Path, shots: Path):
    ctx = browser.new_context(offline=True, viewport={"width": 1280, "height": 900})
    page = ctx.new_page()
    problems, dialogs = [], []
    page.on(
        "console",
        lambda m: problems.append(f"console {m.type}: {m.text}") if m.type == "error" else None,
    )
    page.on("pageerror", lambda e: problems.append(f"page error: {e}"))
    page.on("requestfailed", lambda r: problems.append(f"failed request: {r.url}"))
    page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    page.goto(page_path.as_uri())
    page.wait_for_load_state("load")
    page.wait_for_timeout(800)
    shots.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(shots / f"{page_path.stem}.png"), full_page=True)
    info = {
        # notebook chart outputs are SVG images (image/svg+xml; nbconvert shows them as <img>)
        "charts": page.locator(".trainperf-chart, img[src^='data:image/svg+xml']").count(),
        "charts_drawn": page.locator(".trainperf-chart canvas, .trainperf-chart svg").count()
        + page.locator("img[src^='data:image/svg+xml']").evaluate_all(
            "els => els.filter(e => e.complete && e.naturalWidth > 0).length"
        ),
        "figures": page.locator("figure").count(),
        "figures_drawn": page.locator("figure svg").count(),
        "nav": page.locator("header nav a").evaluate_all(
            "els => els.map(e => e.getAttribute('href'))"
        ),
        "injected_img": page.locator("img[src='x']").count(),
        "text": page.inner_text("body"),
    }
    ctx.close()
    return info, problems, dialogs


def test_every_page_renders_offline(main_job, browser):
    tmp, summary = main_job
    site = Path(summary["site"]).parent
    pages = sorted(site.glob("*.html"))
    assert len(pages) >= 10
    total_charts = 0
    for page in pages:
        info, problems, dialogs = _visit(browser, page, tmp / "screenshots")
        assert problems == [], (page.name, problems)
        assert dialogs == [], (page.name, dialogs)
        assert info["charts_drawn"] >= info["charts"], (
            page.name,
            info["charts"],
            info["charts_drawn"],
        )
        assert info["figures_drawn"] == info["figures"], page.name
        for href in info["nav"]:
            assert (site / href).is_file(), (page.name, href)
        total_charts += info["charts"] + info["figures"]
        assert (tmp / "screenshots" / f"{page.stem}.png").stat().st_size > 10_000
    assert total_charts >= 20


def test_hostile_job_name_stays_text(main_job, browser):
    tmp, summary = main_job
    site = Path(summary["site"]).parent
    for name in ("operations.html", "notebook-slurm_jobs.html"):
        info, problems, dialogs = _visit(browser, site / name, tmp / "screenshots")
        assert info["injected_img"] == 0 and dialogs == [] and problems == []
        assert XSS in info["text"], f"{name}: the job name should be shown as text"
