"""Which figure languages can be written on this machine: a CJK font for Japanese, found through fontconfig.

vl-convert draws text with the fonts it finds on the system; a font family it does not have draws
nothing at all, so a Japanese figure rendered without a CJK font has no text. Before anything is
written in Japanese, :func:`find_cjk_font` asks fontconfig (``fc-list :lang=ja``) for an installed
font with Japanese glyphs; without one, Japanese figures are skipped and :func:`figure_languages`
says why in one line. Never a figure without its text.

Environment:
    ``TRAINPERF_CJK_FONT``: use this family for Japanese figures (it must be installed).
    ``TRAINPERF_FIGURE_LANGS``: comma-separated languages to write (default ``en,ja``); the main job
    sets ``en`` after it has said why Japanese is skipped, so notebooks do not repeat it.
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
import warnings
from dataclasses import dataclass
from pathlib import Path

import vl_convert as vlc

from trainperf.report.charts.i18n import FONTS

__all__ = [
    "FIGURE_LANGS",
    "PREFERRED_CJK_FONTS",
    "CjkFont",
    "figure_languages",
    "find_cjk_font",
]

#: Languages every exported figure is written in (``figures/<name>.*`` for English,
#: ``figures/<lang>/<name>.*`` for the others). The talk was given in Japanese.
FIGURE_LANGS: tuple[str, ...] = ("en", "ja")

#: CJK families tried in this order (sans-serif Japanese faces first).
PREFERRED_CJK_FONTS: tuple[str, ...] = (
    "Noto Sans CJK JP",
    "Noto Sans JP",
    "Source Han Sans JP",
    "Source Han Sans",
    "IPAexGothic",
    "IPAGothic",
    "TakaoGothic",
    "VL Gothic",
    "Noto Sans CJK SC",
    "Noto Serif CJK JP",
)
LANGS_ENV = "TRAINPERF_FIGURE_LANGS"
INSTALL_HINT = "install one, e.g. `apt-get install fonts-noto-cjk`"


@dataclass(frozen=True)
class CjkFont:
    """Result of :func:`find_cjk_font`.

    Attributes:
        family: the font family to name in the figures, or None when none can be used.
        files: font files of that family (from fontconfig).
        reason: why ``family`` is None (one sentence), or "" when a font was found.
    """

    family: str | None
    files: tuple[str, ...] = ()
    reason: str = ""


def _fc_list(fc_list: str) -> list[tuple[list[str], str]]:
    out = subprocess.run(
        [fc_list, ":lang=ja", "--format=%{family}\\t%{file}\\n"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    fonts = []
    for line in out.stdout.splitlines():
        fam, _, file = line.partition("\t")
        names = [f.strip() for f in fam.split(",") if f.strip()]
        if names:
            fonts.append((names, file.strip()))
    return fonts


@functools.lru_cache(maxsize=8)
def _fc_list_cached(fc_list: str) -> tuple[tuple[list[str], str], ...]:
    return tuple(_fc_list(fc_list))


def _rank(names: list[str]) -> int:
    for i, pref in enumerate(PREFERRED_CJK_FONTS):
        if any(n.lower() == pref.lower() for n in names):
            return i
    plain = not any(w in names[0] for w in ("Mono", "Serif", "Mincho"))
    return len(PREFERRED_CJK_FONTS) + (0 if plain else 1)


def find_cjk_font(requested: str | None = None, *, fc_list: str | None = None) -> CjkFont:
    """Find an installed font with Japanese glyphs through fontconfig.

    Args:
        requested: a family to use (default ``$TRAINPERF_CJK_FONT``); if given it must be installed
            and cover Japanese, otherwise the result has no family and says so.
        fc_list: the ``fc-list`` executable (default: found on PATH).

    Returns:
        :class:`CjkFont`: the best family (:data:`PREFERRED_CJK_FONTS` order, then any sans face)
        and its files, or no family and the reason. Never raises for a missing font or fontconfig.
    """
    requested = requested or os.environ.get("TRAINPERF_CJK_FONT") or None
    exe = fc_list or shutil.which("fc-list")
    if exe is None:
        return CjkFont(
            None,
            reason=f"fontconfig's fc-list is not installed, so no CJK font can be found ({INSTALL_HINT} and fontconfig)",
        )
    try:
        fonts = _fc_list_cached(exe)
    except (OSError, subprocess.SubprocessError) as exc:
        return CjkFont(None, reason=f"fc-list :lang=ja failed: {exc}")
    if requested:
        files = tuple(
            sorted({f for names, f in fonts if any(n.lower() == requested.lower() for n in names)})
        )
        if not files:
            return CjkFont(
                None,
                reason=f"the requested font {requested!r} is not installed with Japanese glyphs (fc-list :lang=ja does not list it); {INSTALL_HINT} or name an installed one",
            )
        return CjkFont(requested, files)
    if not fonts:
        return CjkFont(
            None,
            reason=f"no installed font has Japanese glyphs (fc-list :lang=ja lists none); {INSTALL_HINT}",
        )
    names, _ = min(fonts, key=lambda nf: (_rank(nf[0]), nf[0][0]))
    family = next(
        (n for n in names if n.lower() in {p.lower() for p in PREFERRED_CJK_FONTS}), names[0]
    )
    files = tuple(sorted({f for ns, f in fonts if family in ns}))
    return CjkFont(family, files)


@functools.cache
def _registered_font_dirs(dirs: tuple[str, ...]) -> None:

    for d in dirs:
        vlc.register_font_directory(d)


def use_font_files(files: tuple[str, ...]) -> None:
    """Make sure vl-convert sees ``files``: their folders outside the system font folders are registered."""
    system = ("/usr/share/fonts", "/usr/local/share/fonts")
    dirs = tuple(sorted({str(Path(f).parent) for f in files if not f.startswith(system)}))
    if dirs:
        _registered_font_dirs(dirs)


_warned: set[str] = set()


def figure_languages(
    langs=None, *, warn: bool = True
) -> tuple[tuple[str, ...], dict[str, str], str]:
    """The languages figures can be written in now, the font of each, and why any were left out.

    Args:
        langs: requested languages; None: ``$TRAINPERF_FIGURE_LANGS`` or :data:`FIGURE_LANGS`.
        warn: issue one ``UserWarning`` per process when Japanese is skipped (the main job passes
            False and logs the reason itself).

    Returns:
        ``(languages, fonts, note)``: the languages to write, ``{lang: font family}`` for the
        non-English ones, and one line saying which language was skipped and why ("" if none).
    """

    if langs is None:
        env = os.environ.get(LANGS_ENV, "")
        langs = tuple(x.strip() for x in env.split(",") if x.strip()) or FIGURE_LANGS
    langs = tuple(langs)
    unknown = [lang for lang in langs if lang not in FONTS]
    if unknown:
        raise ValueError(f"unknown figure language {unknown[0]!r}; known: {sorted(FONTS)}")
    fonts: dict[str, str] = {}
    if "ja" not in langs:
        return langs, fonts, ""
    found = find_cjk_font()
    if found.family is None:
        note = f"Japanese figures skipped: {found.reason}"
        if warn and note not in _warned:
            _warned.add(note)
            warnings.warn(note, UserWarning, stacklevel=3)
        return tuple(lang for lang in langs if lang != "ja"), fonts, note
    use_font_files(found.files)
    fonts["ja"] = found.family
    return langs, fonts, ""
