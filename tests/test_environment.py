"""environment.yml (conda) and pyproject.toml (pip) must list the same dependencies."""

from __future__ import annotations

import re
import tomllib

import yaml
from helpers import ROOT


def _name_spec(req: str) -> tuple[str, str]:
    m = re.match(r"^\s*([A-Za-z0-9_.\-]+)\s*(.*)$", req)
    return m.group(1).lower().replace("_", "-"), m.group(2).replace(" ", "")


def test_environment_matches_pyproject():
    py = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    wanted = dict(_name_spec(r) for r in py["dependencies"] + py["optional-dependencies"]["dev"])
    env = yaml.safe_load((ROOT / "environment.yml").read_text())
    conda, pip = {}, {}
    for dep in env["dependencies"]:
        if isinstance(dep, dict):
            for r in dep["pip"]:
                if not r.startswith("-e"):
                    pip.update([_name_spec(r)])
        else:
            conda.update([_name_spec(dep)])
    assert "-e ." in next(d for d in env["dependencies"] if isinstance(d, dict))["pip"]
    for extra in ("python", "quarto", "pip"):
        conda.pop(extra, None)
    assert {**conda, **pip} == wanted
    assert not set(conda) & set(pip)
