"""A real one-node Slurm cluster (with accounting) for the tests that submit jobs.

Use it with ``from slurm_cluster import slurm_cluster  # noqa: F401`` and a ``slurm_cluster`` argument.

The session-scoped fixture starts munged, MariaDB, slurmdbd, slurmctld and slurmd on free loopback
ports in a scratch folder with ``scripts/slurm_cluster.sh start`` (about 5 s), points ``SLURM_CONF`` at
it for the rest of the session (the previous environment is restored at the end), and stops every
daemon by its PID at the end of the session, also when a test failed. Jobs run on this machine as root
with the submitter's environment, so they see the same files and the same Python (submitit submits
``sys.executable``).

It is skipped, with the reason, when the packages are not installed or the tests do not run as root.
A cluster that is configured but does not come up is a failure, with the ends of its logs.

An external cluster is used instead when ``TRAINPERF_SLURM_PARTITION`` is set and ``sinfo`` answers:
nothing is started then, and jobs go to that partition.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "slurm_cluster.sh"
# what scripts/slurm_cluster.sh start runs or calls; the client commands too, for the tests
BINARIES = (
    "munged",
    "mungekey",
    "mariadb-install-db",
    "mariadbd",
    "mariadb",
    "slurmdbd",
    "slurmctld",
    "slurmd",
    "sacctmgr",
    "scontrol",
    "sinfo",
    "squeue",
    "scancel",
    "sacct",
    "sbatch",
)
INSTALL = "apt-get install -y slurm-wlm slurmdbd mariadb-server munge"


@dataclass(frozen=True)
class SlurmCluster:
    """A cluster the tests can submit to."""

    partition: str  # the partition to submit to
    folder: Path | None  # scratch folder with etc/, log/, env.sh, pids (None: external cluster)
    env: dict[str, str]  # what was added to os.environ for the session (SLURM_CONF)

    @property
    def external(self) -> bool:
        return self.folder is None


def slurm_reachable() -> str | None:
    """None when a Slurm cluster answers with the current environment, else why not."""
    if not shutil.which("sbatch"):
        return "no Slurm: sbatch is not on PATH"
    try:
        rc = subprocess.run(["sinfo"], capture_output=True, timeout=15).returncode
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"no Slurm cluster reachable: sinfo failed ({exc})"
    if rc != 0:
        return f"no Slurm cluster reachable: sinfo exited {rc} (no slurmctld configured or running)"
    return None


def why_no_local_cluster() -> str | None:
    """None when scripts/slurm_cluster.sh can start a cluster here, else the reason to skip."""
    missing = [b for b in BINARIES if shutil.which(b) is None]
    if missing:
        return f"Slurm test cluster needs {', '.join(missing)} on PATH ({INSTALL})"
    if os.geteuid() != 0:
        return "Slurm test cluster needs root (its daemons run as SlurmUser=root)"
    return None


def read_env_sh(path: Path) -> dict[str, str]:
    """The ``export NAME=VALUE`` lines of the env.sh that slurm_cluster.sh writes."""
    env = {}
    for line in path.read_text().splitlines():
        if line.startswith("export "):
            name, _, value = line.removeprefix("export ").partition("=")
            env[name.strip()] = value.strip()
    return env


def _default_partition(env: dict[str, str]) -> str:
    out = subprocess.run(
        ["sinfo", "-h", "-o", "%P"], env=env, capture_output=True, text=True, timeout=30, check=True
    ).stdout.split()
    default = [p for p in out if p.endswith("*")]
    return (default or out)[0].rstrip("*")


def _stop(folder: Path) -> None:
    subprocess.run([str(SCRIPT), "stop", str(folder)], capture_output=True, timeout=120)


@pytest.fixture(scope="session")
def slurm_cluster() -> Iterator[SlurmCluster]:
    """Start a real one-node Slurm cluster for the session (see the module docstring)."""
    external = os.environ.get("TRAINPERF_SLURM_PARTITION")
    if external and slurm_reachable() is None:
        yield SlurmCluster(partition=external, folder=None, env={})
        return
    reason = why_no_local_cluster()
    if reason:
        pytest.skip(reason)
    # short path in /tmp: the folder holds Unix sockets (108-byte limit), pytest's basetemp may be long
    folder = Path(tempfile.mkdtemp(prefix="trainperf-slurm-"))
    try:
        proc = subprocess.run(
            [str(SCRIPT), "start", str(folder)], capture_output=True, text=True, timeout=240
        )
    except subprocess.TimeoutExpired as exc:
        _stop(folder)
        pytest.fail(f"scripts/slurm_cluster.sh start {folder} took over {exc.timeout} s")
    if proc.returncode != 0:
        # the script stopped what it had started; its stderr has the ends of the daemons' logs
        shutil.rmtree(folder, ignore_errors=True)
        pytest.fail(
            f"scripts/slurm_cluster.sh start {folder} failed (exit {proc.returncode}):\n"
            + proc.stderr[-4000:]
        )
    added = read_env_sh(folder / "env.sh")
    saved = {name: os.environ.get(name) for name in added}
    try:
        os.environ.update(added)
        yield SlurmCluster(_default_partition(dict(os.environ)), folder, added)
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
        _stop(folder)
        if os.environ.get("KEEP_SCRATCH") == "1":
            print(f"Slurm test cluster folder kept: {folder}")
        else:
            shutil.rmtree(folder, ignore_errors=True)
