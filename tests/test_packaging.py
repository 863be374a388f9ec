"""environment.yml (conda) and pyproject.toml declare the same dependencies."""

from __future__ import annotations

import re
import tomllib
from importlib.metadata import version
from pathlib import Path

import yaml
from packaging.requirements import Requirement

ROOT = Path(__file__).resolve().parents[1]
CONDA_TO_PIP = {"python-kaleido": "kaleido", "gurobi": "gurobipy"}


def _name(req: str) -> str:
    return re.split(r"[<>=!~\[ ;]", req.strip(), maxsplit=1)[0].lower().replace("_", "-")


def _pyproject() -> dict[str, str]:
    deps = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    return {_name(d): d for d in deps}


def _conda() -> dict[str, str]:
    env = yaml.safe_load((ROOT / "environment.yml").read_text())
    out = {}
    for d in env["dependencies"]:
        if isinstance(d, str) and _name(d) not in ("python", "pip"):
            name = CONDA_TO_PIP.get(_name(d), _name(d))
            out[name] = name + d[len(_name(d)) :]
    return out


def _spec(req: str) -> str:
    return re.sub(r"^[\w.-]+(\[[^\]]*\])?", "", req.strip()).replace(" ", "")


def test_same_packages_and_versions():
    pip, conda = _pyproject(), _conda()
    assert set(pip) == set(conda), (
        f"only in pyproject: {set(pip) - set(conda)}; only in conda: {set(conda) - set(pip)}"
    )
    for name in pip:
        assert _spec(pip[name]) == _spec(conda[name]), name


def test_python_floor_agrees():
    req = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["requires-python"]
    env = yaml.safe_load((ROOT / "environment.yml").read_text())
    assert f"python{req}" in env["dependencies"]


def test_installed_environment_satisfies_the_conda_set():
    # conda is not reachable here; the venv pip resolved from pyproject must satisfy the mapped conda set
    for name, req in _conda().items():
        r = Requirement(req)
        installed = version(r.name)
        assert r.specifier.contains(installed, prereleases=True), (
            f"{name} {installed} does not satisfy {req}"
        )
