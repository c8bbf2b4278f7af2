"""Network checks of a built site: every URL a page (or a stylesheet it loads) would fetch."""

from __future__ import annotations

import re
from pathlib import Path

_EXTERNAL_RE = re.compile(
    r"<(?:script|link|img|iframe|source|video|audio|embed|object)\b[^>]*?\b(?:src|href|data)\s*=\s*[\"']((?:https?:)?//[^\"']+)",
    re.I,
)
_CSS_URL_RE = re.compile(
    r"""(?:@import\s+(?:url\()?|url\()\s*["']?((?:https?:)?//[^"')\s;]+)""", re.I
)
_CSS_LOCAL_RE = re.compile(r"""(?:@import\s+(?:url\()?|url\()\s*["']?([^"')\s;:]+\.css)""", re.I)
_LINK_CSS_RE = re.compile(r"<link\b[^>]*?\bhref\s*=\s*[\"']([^\"':]+\.css)[\"']", re.I)
_STYLE_RE = re.compile(r"<style\b[^>]*>(.*?)</style>", re.I | re.S)


def external_urls(html_text: str) -> list[str]:
    """URLs of external resources a page would fetch: ``<script src>``, ``<link href>``,
    ``<img src>``... and ``@import``/``url()`` in its inline ``<style>`` blocks."""
    urls = set(_EXTERNAL_RE.findall(html_text))
    for css in _STYLE_RE.findall(html_text):
        urls.update(_CSS_URL_RE.findall(css))
    return sorted(urls)


def _css_loads(css_file: Path, seen: set[Path]) -> set[str]:
    if css_file in seen or not css_file.is_file():
        return set()
    seen.add(css_file)
    text = css_file.read_text(encoding="utf-8", errors="replace")
    urls = set(_CSS_URL_RE.findall(text))
    for rel in _CSS_LOCAL_RE.findall(text):
        urls |= _css_loads((css_file.parent / rel).resolve(), seen)
    return urls


def network_loads(site_dir: str | Path) -> dict[str, list[str]]:
    """Every page of a built site (Quarto's ``_book`` or the preview) that would fetch something
    from the network, with the URLs: tags of :func:`external_urls`, and ``@import``/``url()`` in the
    local stylesheets the page links (followed through local ``@import``), e.g. a theme's web font.

    Returns:
        ``{page path relative to site_dir: [urls]}``, only pages with at least one URL.
    """
    site_dir = Path(site_dir)
    out = {}
    for page in sorted(site_dir.rglob("*.html")):
        text = page.read_text(encoding="utf-8", errors="replace")
        urls = set(external_urls(text))
        seen: set[Path] = set()
        for rel in _LINK_CSS_RE.findall(text):
            urls |= _css_loads((page.parent / rel).resolve(), seen)
        if urls:
            out[str(page.relative_to(site_dir))] = sorted(urls)
    return out
