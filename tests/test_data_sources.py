"""Every number the book shows is traced to a public source, never to the project's working notes.

The working notes (research notes outside this repository) name the primary sources; the data
files, chapters, preface, talk and notebooks must cite those sources themselves (an MLCommons
repository with commit and path, a paper's arXiv id and table, a vendor page, a TOP500 list).
"""

from __future__ import annotations

import csv
import re
import subprocess
from pathlib import Path

import pytest
from helpers import MLPERF, ROOT

from trainperf.mlperf import load_results

REFERENCE = ROOT / "data" / "reference"

# Files whose text the reader sees or that hold the book's numbers, and the code, tests and scripts
# whose docstrings and comments cite sources.
CITING = [
    ROOT / d
    for d in ("src", "data", "chapters", "notebooks", "tests", "scripts", "talk", "index.qmd")
]

# A citation of the working notes: their folder (or the material folder they sit in), a
# "<note>.md §N" section, the words "research notes", or one of the notes by file name.
NOTE_CITATION = re.compile(
    r"shared/research"
    r"|/work/shared\b|\.\./shared\b"
    r"|research notes"
    r"|\.md\s*§"
    r"|\b(?:mfu_and_results|sakuraone_paper|talk_and_blog|telemetry_formats|real_components"
    r"|quarto_book_anchors)\.md\b",
    re.IGNORECASE,
)

RELAYED = "as relayed by a third-party summary; not checked against the paper"


def note_citations(text: str, name: str = "<text>") -> list[str]:
    """``name:line: excerpt`` for every line of ``text`` that cites the working notes."""
    low = text.lower()  # fast literal pre-check: every pattern contains one of these
    if not any(m in low for m in ("shared", "research notes", ".md")):
        return []
    return [
        f"{name}:{n}: {line.strip()[:120]}"
        for n, line in enumerate(text.splitlines(), 1)
        if NOTE_CITATION.search(line)
    ]


def _files(roots):
    """The tracked files under ``roots`` (``git ls-files``), or every file when git is absent."""
    try:
        out = subprocess.run(
            ["git", "ls-files", "-z", "--", *(str(r.relative_to(ROOT)) for r in roots)],
            cwd=ROOT,
            capture_output=True,
            check=True,
        ).stdout
        tracked = [ROOT / p for p in out.decode().split("\0") if p]
    except (OSError, subprocess.CalledProcessError):
        tracked = []
    if tracked:
        yield from (p for p in tracked if p.is_file())
        return
    for root in roots:
        if root.is_file():
            yield root
        elif root.is_dir():
            yield from (p for p in sorted(root.rglob("*")) if p.is_file())


# This file names the patterns it looks for; it is the one file allowed to.
SELF = Path(__file__).resolve()


def test_no_file_cites_the_working_notes():
    found, scanned = [], 0
    for path in _files(CITING):
        if path.resolve() == SELF:
            continue
        data = path.read_bytes()
        if b"\0" in data[:8192]:  # binary (PNG, Parquet): nothing to cite
            continue
        scanned += 1
        found += note_citations(data.decode("utf-8", "replace"), str(path.relative_to(ROOT)))
    # the 42 bundled MLPerf files alone, plus the sources, tests, READMEs, CSVs, chapters, notebooks
    assert scanned > 200
    assert found == []


@pytest.mark.parametrize(
    "line",
    [
        "parsed in shared/research/mfu_and_results.md §5.1",
        "score per talk_and_blog.md §2.3",
        "(see `../shared` Research Notes; to be checked)",
        "as relayed (sakuraone_paper.md §3.1)",
        "numbers in notes.md  §4",
        "telemetry_formats.md",
        "Recipe and facts: /work/shared/research/real_components.md.",
        "the logs are in `../shared/data/mlperf/v3.1`",
        "# ``/work/shared/data`` holds the logs",
    ],
)
def test_note_citation_detector_catches(line):
    assert note_citations(f"ok line\n{line}\n", "f.md") == [f"f.md:2: {line.strip()}"]


@pytest.mark.parametrize(
    "line",
    [
        "https://github.com/mlcommons/training_results_v4.1/tree/b87b9e39/NVIDIA/results/x/gpt3",
        "arXiv 2604.13600 Table 9, as relayed by a third-party summary; not checked against the paper",
        "see data/mlperf/SOURCES.md and README.md section 2",
        "os.fchmod(fd, 0o644)  # outputs are meant to be shared",
        "on shared nodes sacct has no GPU index",
        "Megatron-LM@d98e8a64:docs/user-guide/features/dist_optimizer.md:14-20",
    ],
)
def test_note_citation_detector_lets_public_sources_pass(line):
    assert note_citations(line) == []


def _rows(name: str) -> list[dict]:
    with (REFERENCE / f"{name}.csv").open(newline="") as f:
        return list(csv.DictReader(f))


def _source_cells():
    for name, cols in [
        ("published_results", ["source"]),
        ("accelerators", ["source_url"]),
        ("memory_wall", ["source"]),
        ("systems", ["source_sakuraone", "source_eos"]),
        ("top500", ["source"]),
        ("parallel_layouts", ["source"]),
        ("accelerator_generations", ["source"]),
    ]:
        for i, row in enumerate(_rows(name), 2):
            for col in cols:
                yield f"{name}.csv:{i}:{col}", row[col]


def test_every_reference_row_names_a_public_source():
    # a URL, an arXiv id, or a file bundled in data/mlperf (the MLCommons systems JSON)
    bundled = {p.name for p in MLPERF.rglob("*.json")}
    bad = []
    for where, text in _source_cells():
        files = set(re.findall(r"[\w.-]+\.json", text))
        if not (re.search(r"https://|arXiv \d{4}\.\d{5}", text) or (files and files <= bundled)):
            bad.append(f"{where}: {text!r}")
    assert bad == []


def test_sakuraone_numbers_say_they_are_relayed():
    # every SAKURAONE number from the MLSys paper comes from a third-party summary of it
    rows = [r for r in _rows("published_results") if r["system"] == "SAKURAONE"]
    assert len(rows) == 7
    for r in rows:
        assert "arXiv 2604.13600" in r["source"] and RELAYED in r["source"], r
        assert re.search(r"Tables? \d", r["source"]), r
        assert r["verified"] == "false"
    for r in _rows("systems"):
        if "2604.13600 Table" in r["source_sakuraone"] or "section" in r["source_sakuraone"]:
            assert RELAYED in r["source_sakuraone"], r
    (top,) = [r for r in _rows("top500") if r["system"] == "SAKURAONE"]
    assert RELAYED in top["source"] and "top500.org/lists/top500/2025/06" in top["source"]


# Rows of published_results.csv whose logs are bundled: (system, round, benchmark, n_gpus) -> folder.
BUNDLED_ROWS = {
    ("Eos", "v3.1", "gpt3", "512"): "eos_n64_ngc23.09_nemo",
    ("Eos", "v3.1", "gpt3", "768"): "eos_n96_ngc23.09_nemo",
    ("Eos-dfw", "v4.0", "gpt3", "10752"): "eos-dfw_n1344_ngc24.04_nemo",
    ("Eos", "v4.1", "gpt3", "256"): "eos_n32_ngc24.09_nemo",
    ("Eos", "v4.1", "gpt3", "512"): "eos_n64_ngc24.09_nemo",
    ("Eos", "v4.1", "llama2_70b_lora", "8"): "eos_ngc24.09_nemo",
    ("Eos", "v4.1", "llama2_70b_lora", "64"): "eos_n8_ngc24.09_nemo",
    ("Eos", "v4.1", "llama2_70b_lora", "1024"): "eos_n128_ngc24.09_nemo",
    ("OCI BM.GPU.H100.8", "v4.1", "gpt3", "1536"): "1536xBM.GPU.H100.8",
}

#: Bundled folders with no published row: the reference for users' llama31_405b results (their
#: scores are the logs' own, scaling.json included; no transcribed row to agree with).
BUNDLED_WITHOUT_ROW = {"v5.0/NVIDIA/results/eos-dfw_n64_ngc25.01_nemo/llama31_405b",
                       "v5.0/NVIDIA/results/eos-dfw_n256_ngc25.01_nemo/llama31_405b"}  # fmt: skip


@pytest.fixture(scope="module")
def bundled():
    return load_results(MLPERF)


def test_reference_rows_of_bundled_logs_agree_with_the_logs(bundled):
    # The table's minutes, at the precision written there, are the scores of the bundled logs, and
    # the row's source names the MLCommons folder of those logs.
    scores = bundled.scores
    by_key = {(s["round"], s["system"], s["benchmark"]): s for s in scores.iter_rows(named=True)}
    rows = {
        (r["system"], r["round"], r["benchmark"], r["n_gpus"]): r
        for r in _rows("published_results")
    }
    for key, folder in BUNDLED_ROWS.items():
        row = rows[key]
        s = by_key[(key[1], folder, key[2])]
        decimals = len(row["minutes"].partition(".")[2])
        assert round(s["score_min"], decimals) == pytest.approx(float(row["minutes"]), abs=1e-9), (
            key
        )
        assert s["n_accelerators"] == int(key[3])
        assert f"/results/{folder}/{key[2]} (copied in data/mlperf/{key[1]})" in row["source"]
    # and no other row claims to be bundled
    others = [r for k, r in rows.items() if k not in BUNDLED_ROWS]
    assert not [r for r in others if "copied in data/mlperf" in r["source"]]


def test_sources_md_names_every_bundled_folder(bundled):
    # data/mlperf/SOURCES.md rows cover every results folder the loader finds
    table = (MLPERF / "SOURCES.md").read_text()
    listed = set(
        re.findall(r"^\| `(v[\d.]+/[^/]+/results/[^/]+/[^/]+)/result_\d+\.txt`", table, re.M)
    )
    found = {
        Path(p).parent.relative_to(MLPERF).as_posix() for p in bundled.runs["result_file"].to_list()
    }
    assert listed == found
    assert len(found) == len(BUNDLED_ROWS) + len(BUNDLED_WITHOUT_ROW)
    assert found >= BUNDLED_WITHOUT_ROW


def test_preface_says_what_is_transcribed():
    text = (ROOT / "index.qmd").read_text()
    assert "Nothing here is typed in by hand" not in text
    flat = " ".join(text.split())
    assert "third-party summary" in flat and "SAKURAONE" in flat
    assert "TOP500" in flat and "datasheets" in flat
