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


# -- the talk's decks at 1600 x 900 -----------------------------------------------------------------

_SLIDE_JS = """() => {
  const slide = Reveal.getCurrentSlide();
  const scale = Reveal.getScale();
  let smallest = 1e9, of = '';
  const walker = document.createTreeWalker(slide, NodeFilter.SHOW_TEXT);
  let node;
  while ((node = walker.nextNode())) {
    const text = node.textContent.trim();
    const el = node.parentElement;
    if (!text || el.closest('aside.notes') || el.getBoundingClientRect().width === 0) continue;
    const px = parseFloat(getComputedStyle(el).fontSize) * scale;
    if (px < smallest) { smallest = px; of = text.slice(0, 60); }
  }
  const bottoms = [...slide.querySelectorAll('*')]
    .filter(e => !e.closest('aside.notes') && e.getBoundingClientRect().height > 0)
    .map(e => e.getBoundingClientRect().bottom);
  return {
    id: slide.id, scale, smallest, of,
    text: slide.innerText,
    bottom: Math.max(0, ...bottoms),
    images: [...slide.querySelectorAll('img')].map(i => {
      const r = i.getBoundingClientRect();
      return {src: i.getAttribute('src'), w: r.width, h: r.height};
    }),
  };
}"""


@pytest.fixture(scope="module")
def rendered_talk(main_job, tmp_path_factory):
    """Both decks rendered by Quarto from the main job's figures and values (``make talk``)."""
    if shutil.which("quarto") is None:
        pytest.skip("quarto is not on PATH (cannot be installed offline; see README)")
    import importlib.util  # noqa: PLC0415
    import subprocess  # noqa: PLC0415

    from helpers import ROOT  # noqa: PLC0415

    tmp, _ = main_job
    if not (tmp / "figures" / "ja").is_dir():
        pytest.skip("no CJK font: the Japanese figures were not exported (install fonts-noto-cjk)")
    work = tmp_path_factory.mktemp("talk") / "talk"
    shutil.copytree(
        ROOT / "talk",
        work,
        ignore=shutil.ignore_patterns("_output", "figures", ".quarto", "values.yml"),
    )
    spec = importlib.util.spec_from_file_location("talk_prepare", ROOT / "talk" / "prepare.py")
    prepare = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(prepare)
    assert prepare.prepare(tmp / "figures", tmp / "out" / "values.yml", work) == []
    subprocess.run(["quarto", "render"], cwd=work, check=True, capture_output=True)
    return work


def test_every_slide_is_readable_at_1600_by_900(rendered_talk, browser, tmp_path_factory):
    """Issue 39: every slide of both decks in a 1600 x 900 window (the projector): text of 20 px
    or more, the smallest text of each chart too (its picture's smallest text x the size it is
    shown at), nothing below the slide's bottom, short slide ids, no raw long number
    (1076000000000). A screenshot per slide."""
    import json  # noqa: PLC0415
    import re  # noqa: PLC0415

    shots = tmp_path_factory.mktemp("slides")
    for deck in ("index.html", "en.html"):
        ctx = browser.new_context(offline=True, viewport={"width": 1600, "height": 900})
        page = ctx.new_page()
        page.goto((rendered_talk / "_output" / deck).as_uri())
        page.wait_for_function("typeof Reveal !== 'undefined' && Reveal.isReady()")
        page.evaluate("Reveal.configure({transition: 'none', backgroundTransition: 'none'})")
        n = page.evaluate("Reveal.getTotalSlides()")
        assert n >= 20, deck
        for i in range(n):
            page.evaluate(
                f"(() => {{ const s = Reveal.getSlides()[{i}]; const ix = Reveal.getIndices(s); Reveal.slide(ix.h, ix.v); }})()"
            )
            page.wait_for_timeout(150)
            info = page.evaluate(_SLIDE_JS)
            where = (deck, i + 1, info["id"])
            page.screenshot(path=str(shots / f"{Path(deck).stem}_{i + 1:02d}.png"))
            assert info["scale"] == pytest.approx(0.96, abs=0.005), where  # 1 - margin 0.04
            assert info["smallest"] >= 20, (*where, info["smallest"], info["of"])
            assert info["bottom"] <= 900, (*where, info["bottom"])
            assert len(info["id"]) <= 80, where
            assert not re.search(r"\d{10,}", info["text"]), where
            for img in info["images"]:
                note = rendered_talk / Path(img["src"]).with_name(
                    f".{Path(img['src']).stem}.slide.json"
                )
                drawn = json.loads(note.read_text(encoding="utf-8"))
                shown = min(img["w"] / drawn["width"], img["h"] / drawn["height"])
                assert drawn["smallest_text_px"] * shown >= 20, (*where, img["src"])
        ctx.close()
    print(f"slide screenshots in {shots}")
