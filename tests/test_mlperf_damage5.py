"""Damaged MLPerf results, trial B: a CRLF copy of a result file is a copy (F3); a run_stop status
that is not one mlperf-logging writes leaves the outcome unknown (F8); a clock stepped forward
inside a log (F4). Expected values by hand."""

from __future__ import annotations

import json

import pytest
from helpers import gpt3_run
from helpers import load_results_warned as load

from trainperf.mlperf.timeline import _digest


def test_crlf_copy_of_a_result_file_is_a_copy(results_tree):
    # runs of 10, 12 and 14 min and result_3.txt the CRLF copy of result_0.txt: 3 distinct runs,
    # median 12 min (counting the copy: olympic mean of [10, 10, 12, 14] = 11 min over 4 runs)
    for i, m in enumerate([10.0, 12.0, 14.0]):
        results_tree.add("sysA", "gpt3", i, gpt3_run(minutes=m, seed=i + 1))
    d = results_tree.root / "Acme" / "results" / "sysA" / "gpt3"
    crlf = (d / "result_0.txt").read_bytes().replace(b"\n", b"\r\n")
    (d / "result_3.txt").write_bytes(crlf)
    r, msgs = load(results_tree.root)
    runs = {row["result_file"].rsplit("/", 1)[1]: row for row in r.runs.iter_rows(named=True)}
    assert runs["result_3.txt"]["status"] == "duplicate"
    s = r.scores.row(0, named=True)
    assert s["n_runs"] == 3 and s["score_min"] == pytest.approx(12.0)
    assert any("result_3.txt" in m and "result_0.txt" in m for m in msgs)


def test_crlf_digest_across_chunk_boundary(tmp_path):
    # a CRLF split by the 1 MiB read boundary hashes like LF: CR at byte 2**20 - 1, LF at 2**20
    body = b"a" * ((1 << 20) - 1)
    a, b = tmp_path / "a", tmp_path / "b"
    a.write_bytes(body + b"\n" + b"tail\n")
    b.write_bytes(body + b"\r\n" + b"tail\r\n")
    assert _digest(a) == _digest(b)
    c = tmp_path / "c"
    c.write_bytes(body + b"\r" + b"tail\n")  # a lone CR is content, not a line end
    assert _digest(c) != _digest(a)


def _set_stop_status(lines, raw: bytes) -> bytes:
    text = ("\n".join(lines) + "\n").encode()
    return text.replace(b'"status": "success"', b'"status": "' + raw + b'"')


def test_non_utf8_run_stop_status_is_outcome_unknown(results_tree):
    # "succ\xe9ss" decodes to "succ\ufffdss": neither success nor aborted -> damaged, flagged at the
    # run_stop line (line 11: 7 lines before the 3 evals, run_stop after them)
    p = results_tree.add("sysA", "gpt3", 0, gpt3_run(minutes=10.0))
    p.write_bytes(_set_stop_status(gpt3_run(minutes=10.0), b"succ\xe9ss"))
    r, msgs = load(results_tree.root)
    row = r.runs.row(0, named=True)
    assert row["status"] == "damaged"
    assert r.scores.row(0, named=True)["n_valid_runs"] == 0  # a damaged run is not a success
    q = r.quality.filter(r.quality["check"] == "outcome_unknown").row(0, named=True)
    assert q["action"] == "flagged" and q["first_line"] == 11
    assert any("result_0.txt:11" in m and "outcome_unknown" in m for m in msgs)


def test_aborted_status_stays_aborted(results_tree):
    results_tree.add("sysA", "gpt3", 0, gpt3_run(minutes=10.0, status="aborted"))
    r, _ = load(results_tree.root)
    assert r.runs["status"].to_list() == ["aborted"]
    assert "outcome_unknown" not in r.quality["check"].to_list()


def _shift(lines, ks, ms):
    for k in ks:
        obj = json.loads(lines[k].split(" ", 1)[1])
        obj["time_ms"] += ms
        lines[k] = ":::MLLOG " + json.dumps(obj)
    return lines


def test_clock_stepped_forward_mid_log_is_flagged(results_tree):
    # a 10-min gpt3 run, 5 evals 2 min apart (lines 8..12), run_stop line 13. The clock steps
    # forward 60 min after the 2nd eval: eval 3 (line 10), 4, 5 and run_stop +3,600,000 ms.
    # Gaps: 2, 2, 62, 2, 2 min and 1 ms: 62 > 10 x 2, 62 > the rest (8 min + 1 ms), >= 5 min.
    # Without the check: 70 min, success.
    lines = _shift(gpt3_run(minutes=10.0, n_evals=5), range(9, 13), 3_600_000)
    results_tree.add("sysA", "gpt3", 0, lines)
    r, msgs = load(results_tree.root)
    row = r.runs.row(0, named=True)
    # flagged, the time kept: the same rule fires on real logs the summarizer scores (BERT, DLRM
    # runs of v3.1-v5.1 with one long gap), so it cannot decide a run is damaged
    assert row["status"] == "success" and row["time_to_train_min"] == pytest.approx(70.0)
    q = r.quality.filter(r.quality["check"] == "clock_jump").row(0, named=True)
    assert q["first_line"] == 10 and q["action"] == "flagged"
    assert "62.00 min" in q["detail"]
    assert any("result_0.txt:10" in m and "clock_jump" in m for m in msgs)


def test_one_long_block_in_a_long_run_is_not_a_jump(results_tree):
    # 20 evals 1 min apart, then 10 min added after the 10th (the 11th gap is 11 min): 11 > 10 x 1
    # but not longer than the other gaps together (19 min): a slow block, not a clock step.
    # run_stop - run_start = 20 + 10 = 30 min, success.
    lines = _shift(gpt3_run(minutes=20.0, n_evals=20), range(17, 28), 600_000)
    results_tree.add("sysA", "gpt3", 0, lines)
    r, _ = load(results_tree.root)
    row = r.runs.row(0, named=True)
    assert row["status"] == "success" and row["time_to_train_min"] == pytest.approx(30.0)


def test_20s_step_back_in_a_one_rank_log_is_flagged(results_tree):
    # one run_start, one run_stop: one stream, where no rank skew exists. Eval 2 (line 9) 20 s before
    # eval 1: a step back of 20 s = 0.33 min, flagged, damaged.
    lines = gpt3_run(minutes=10.0, n_evals=3)
    prev = json.loads(lines[7].split(" ", 1)[1])["time_ms"]
    obj = json.loads(lines[8].split(" ", 1)[1])
    obj["time_ms"] = prev - 20_000
    lines[8] = ":::MLLOG " + json.dumps(obj)
    results_tree.add("sysA", "gpt3", 0, lines)
    r, _ = load(results_tree.root)
    row = r.runs.row(0, named=True)
    assert row["status"] == "damaged"
    q = r.quality.filter(r.quality["check"] == "clock_step_back").row(0, named=True)
    assert q["first_line"] == 9 and "0.33 min" in q["detail"]


@pytest.mark.parametrize(
    ("content", "reason"),
    [
        ('{"scaling_factor": 1e308}', "outside (0, 1000)"),  # 12 min x 1e308 overflows to inf
        ('{"scaling_factor": 0}', "outside (0, 1000)"),
        ('{"scaling_factor": true}', "is not a number"),
        ('{"scaling_factor": "1.5"}', "is not a number"),
        ('{"scaling_fac', "not valid JSON"),  # truncated
        ("[1.5]", "no scaling_factor"),
        (None, "not a readable file"),  # a directory named scaling.json
    ],
)
def test_bad_scaling_json_is_flagged_and_gives_no_score(results_tree, content, reason):
    for i, m in enumerate([10.0, 12.0, 14.0]):
        results_tree.add("sysA", "gpt3", i, gpt3_run(minutes=m, seed=i + 1))
    sj = results_tree.root / "Acme" / "results" / "sysA" / "gpt3" / "scaling.json"
    if content is None:
        sj.mkdir()
    else:
        sj.write_text(content)
    r, msgs = load(results_tree.root)
    s = r.scores.row(0, named=True)
    assert s["score_min"] is None and s["scaling_factor"] is None
    assert reason in s["note"] and "TypeError" not in s["note"]
    q = r.quality.filter(r.quality["check"] == "bad_scaling").row(0, named=True)
    assert q["source"] == str(sj) and q["action"] == "excluded" and reason in q["detail"]
    assert any(str(sj) in m and "bad_scaling" in m for m in msgs)


def test_good_scaling_json_scales_the_median(results_tree):
    # median of 10, 12, 14 min = 12 min, x 1.25 = 15 min
    for i, m in enumerate([10.0, 12.0, 14.0]):
        results_tree.add("sysA", "gpt3", i, gpt3_run(minutes=m, seed=i + 1))
    sj = results_tree.root / "Acme" / "results" / "sysA" / "gpt3" / "scaling.json"
    sj.write_text('{"scaling_factor": 1.25}')
    r, _ = load(results_tree.root)
    s = r.scores.row(0, named=True)
    assert s["score_min"] == pytest.approx(15.0) and s["scaling_factor"] == 1.25
    assert "bad_scaling" not in r.quality["check"].to_list()
