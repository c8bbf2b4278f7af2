"""trainperf.telemetry.capture_environment_lines: a capture's versions.txt as a reader sees it."""

from __future__ import annotations

from helpers import DATA

from trainperf import telemetry


def test_escapes_paths_and_legend_are_left_out(tmp_path):
    cap = tmp_path / "h200_1gpu_1.3b_20261201T0923Z"
    cap.mkdir()
    (cap / "versions.txt").write_bytes(
        b"date: 2026-12-01T09:23:36+00:00\n"
        b"command: python3 -m trainperf.smoke --out-dir /tmp/cap/h200_1gpu_1.3b_20261201T0923Z/gpt_smoke"
        b" --log /var/log/x.txt\n"
        b"\n"
        b"\t\x1b[4mGPU0\tCPU Affinity\x1b[0m\n"
        b"GPU0\t X \t0-15\n"
        b"\n"
        b"Legend:\n"
        b"  X    = Self\n"
    )
    assert telemetry.capture_environment_lines(cap / "versions.txt") == [
        "date: 2026-12-01T09:23:36+00:00",
        # the capture folder from its name on; a path elsewhere is left as it is
        "command: python3 -m trainperf.smoke --out-dir h200_1gpu_1.3b_20261201T0923Z/gpt_smoke"
        " --log /var/log/x.txt",
        "GPU0\tCPU Affinity",  # the underline escapes of nvidia-smi topo removed
        "GPU0\t X \t0-15",
    ]


def test_bundled_captures_show_no_escape_and_no_machine_path():
    files = sorted((DATA / "traces").glob("*/versions.txt")) + sorted(
        (DATA / "telemetry").glob("*/versions.txt")
    )
    assert len(files) == 4  # the H200 trace, the two H200 captures, the H100 capture of issue 42
    for f in files:
        lines = telemetry.capture_environment_lines(f)
        assert lines and lines[0].startswith("date: ")
        text = "\n".join(lines)
        assert "\x1b" not in text and "/root/" not in text and "/tmp/" not in text, f
        assert "Legend" not in text
