"""The built site in headless Chromium with networking off: no request leaves the machine, every
image and chart draws, no console error, every cross-reference link lands on an element of its
target page, no table is wider than the text column, a screenshot per page, and user strings stay
text.

Uses Debian's chromium (/usr/bin/chromium) driven by Playwright (never `playwright install`, which
downloads a browser). The site is the Quarto book when quarto is on PATH (conftest.built_site),
otherwise the preview site.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from urllib.parse import unquote, urlparse

import polars as pl
import pypandoc
import pytest

from trainperf.report.display import to_markdown

pytestmark = pytest.mark.slow

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
XSS = "<img src=x onerror=alert(1)>"
LOCAL_SCHEMES = ("file", "data", "about", "blob")


@pytest.fixture(scope="module")
def browser():
    if CHROMIUM is None:
        pytest.skip("Debian chromium not installed (apt-get install chromium; .ci/run installs it)")
    sync_api = pytest.importorskip(
        "playwright.sync_api", reason="playwright not installed (dev extra)"
    )
    with sync_api.sync_playwright() as p:
        # Quarto 1.10's pages load ES module scripts (site_libs/.../tabsets.js), which Chromium
        # refuses from file:// without this flag (origin null, CORS); a reader's browser gets them
        # over http from `trainperf serve`, as the README says (search needs http too)
        args = ["--no-sandbox", "--disable-gpu", "--allow-file-access-from-files"]
        b = p.chromium.launch(executable_path=CHROMIUM, args=args)
        yield b
        b.close()


_INFO_JS = """() => {
  const main = document.querySelector('main') || document.body;
  const style = getComputedStyle(main);
  const text = main.clientWidth - parseFloat(style.paddingLeft) - parseFloat(style.paddingRight);
  return {
    charts: document.querySelectorAll('.trainperf-chart').length,
    charts_drawn: document.querySelectorAll('.trainperf-chart canvas, .trainperf-chart svg').length,
    images: [...document.images].map(i => [i.getAttribute('src').slice(0, 80), i.complete && i.naturalWidth > 0]),
    links: [...document.querySelectorAll('a[href]')].map(a => a.getAttribute('href')),
    xrefs: [...document.querySelectorAll('a.quarto-xref')].map(a => [a.getAttribute('href'), a.textContent]),
    ids: [...document.querySelectorAll('[id]')].map(e => e.id),
    text_width: text,
    tables: [...main.querySelectorAll('table')].map(t => Math.ceil(t.getBoundingClientRect().width)),
    page_width: document.documentElement.scrollWidth,
    viewport: window.innerWidth,
    injected_img: document.querySelectorAll("img[src='x']").length,
    body_text: document.body.innerText,
  };
}"""


def _visit(browser, page_path: Path, shots: Path | None):
    ctx = browser.new_context(offline=True, viewport={"width": 1280, "height": 900})
    page = ctx.new_page()
    problems, dialogs, requests = [], [], []
    page.on(
        "console",
        lambda m: problems.append(f"console {m.type}: {m.text}") if m.type == "error" else None,
    )
    page.on("pageerror", lambda e: problems.append(f"page error: {e}"))
    page.on("requestfailed", lambda r: problems.append(f"failed request: {r.url}"))
    page.on("request", lambda r: requests.append(r.url))
    page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    page.goto(page_path.as_uri())
    page.wait_for_load_state("load")
    page.wait_for_timeout(500)
    if shots is not None:
        shots.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(shots / f"{page_path.stem}.png"), full_page=True)
    info = page.evaluate(_INFO_JS)
    ctx.close()
    info["network"] = [u for u in requests if urlparse(u).scheme not in LOCAL_SCHEMES]
    return info, problems, dialogs


def _pages(site: Path) -> list[Path]:
    return sorted(p for p in site.rglob("*.html") if "site_libs" not in p.parts)


def test_every_page_renders_offline(built_site, browser, tmp_path_factory):
    site = built_site
    shots = tmp_path_factory.mktemp("screenshots")
    pages = _pages(site)
    assert len(pages) >= 16  # preface, 7 chapters, 8 notebook appendices
    visited: dict[Path, dict] = {}
    n_images = n_xrefs = 0
    for page in pages:
        info, problems, dialogs = _visit(browser, page, shots)
        visited[page.resolve()] = info
        assert info["network"] == [], (page.name, info["network"])
        assert problems == [], (page.name, problems)
        assert dialogs == [], (page.name, dialogs)
        assert info["charts_drawn"] >= info["charts"], (page.name, info["charts"])
        assert all(ok for _, ok in info["images"]), (page.name, info["images"])
        n_images += len(info["images"]) + info["charts"]
        # nothing wider than the text column, no horizontal scrollbar
        assert all(w <= info["text_width"] + 1 for w in info["tables"]), (
            page.name,
            info["tables"],
            info["text_width"],
        )
        assert info["page_width"] <= info["viewport"], (page.name, info["page_width"])
        for href in info["links"]:
            target = urlparse(href)
            if target.scheme or not target.path:
                continue
            assert (page.parent / unquote(target.path)).exists(), (page.name, href)
        assert (shots / f"{page.stem}.png").stat().st_size > 10_000
    # every cross-reference lands on an element of its target page
    for page in pages:
        for href, text in visited[page.resolve()]["xrefs"]:
            target = urlparse(href)
            dest = (page.parent / unquote(target.path)).resolve() if target.path else page.resolve()
            if dest not in visited:
                visited[dest] = _visit(browser, dest, None)[0]
            # a reference to a whole chapter (its top heading) is a link to the page itself
            assert not target.fragment or target.fragment in visited[dest]["ids"], (
                page.name,
                href,
                text,
            )
            assert not text.startswith("?"), (page.name, href, text)
            n_xrefs += 1
    assert n_images >= 20 and n_xrefs >= 29  # the chapters' 29 @-references
    print(f"screenshots in {shots}")


def test_hostile_job_name_stays_text(tmp_path, browser):
    # the demo's job names are plain (no test strings in the demo data): the probe name goes
    # through the book's own table path (display.to_markdown, then pandoc) on a page of its own
    md = to_markdown(
        pl.DataFrame({"name": [XSS, "plain"], "days": [3.88, 1.0]}),
        {"name": "Job name", "days": "Run time (days)"},
    )
    body = pypandoc.convert_text(md, "html5", format="markdown", extra_args=["--wrap=none"])
    page = tmp_path / "probe.html"
    page.write_text(f"<!DOCTYPE html><html><body><main>{body}</main></body></html>")
    info, problems, dialogs = _visit(browser, page, None)
    assert info["injected_img"] == 0 and dialogs == [] and problems == []
    assert XSS in info["body_text"], "the job name should be shown as text"
