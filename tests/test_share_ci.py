"""The CI recipe: the workflow ``git pilot ci workflow`` prints, its steps run for real.

The workflow is parsed as YAML; a CI job is simulated locally by running its ``run:`` steps in
order with ``sh -e`` in a fresh clone of a real bare remote (``actions/checkout`` is that clone,
the install step is this checkout's ``git-pilot`` on PATH), with the signing key ssh-keygen
made in tmp_path as the secret and the steps' ``if:`` conditions honoured. Teammates then
reuse CI's signed passes.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from conftest import REPO_ROOT, git, make_repo, run_pilot

yaml = pytest.importorskip("yaml")

CONFIG = "[[check]]\nname = \"unit\"\nrun = \"echo ran >> \\\"$RUNS\\\"; test ! -e fail\"\n"


def workflow(branch: str = "main") -> dict[str, Any]:
    res = run_pilot("ci", "workflow", "--branch", branch, cwd=REPO_ROOT)
    assert res.returncode == 0, res.stderr
    doc = yaml.safe_load(res.stdout)
    assert isinstance(doc, dict)
    return doc


def test_the_workflow_is_yaml_with_the_steps_it_promises() -> None:
    doc = workflow()
    triggers = doc.get("on", doc.get(True))  # YAML 1.1 reads a bare `on` key as true
    assert triggers == {"push": {"branches": ["main"]}}  # never pull_request(_target): no fork sees the key
    assert doc["permissions"] == {"contents": "write"}
    job = doc["jobs"]["checks"]
    assert job["environment"] == "git-pilot-signing"
    steps = job["steps"]
    assert steps[0] == {"uses": "actions/checkout@v4"}
    names = [s.get("name") for s in steps if "run" in s]
    assert names == ["Install git pilot", "Set up signing", "Fetch the team's check notes", "Run the checks",
                     "Push the signed results", "Remove the key"]
    from gitpilot import __version__

    by_name = {s.get("name"): s for s in steps}
    assert by_name["Install git pilot"]["run"] == f'python -m pip install "git-pilot=={__version__}"'
    assert by_name["Set up signing"]["env"] == {"GIT_PILOT_SIGNING_KEY": "${{ secrets.GIT_PILOT_SIGNING_KEY }}"}
    assert "git config pilot.sign true" in by_name["Set up signing"]["run"]
    assert by_name["Run the checks"]["run"] == "git pilot check"
    assert by_name["Push the signed results"]["if"] == "success() || failure()"
    release = workflow("release")
    assert release.get("on", release.get(True)) == {"push": {"branches": ["release"]}}
    doc_text = (REPO_ROOT / "docs" / "ci.md").read_text("utf-8")
    printed = run_pilot("ci", "workflow", cwd=REPO_ROOT).stdout
    m = re.search(r"<!-- ci-workflow:start -->\n```yaml\n(.*?)```\n<!-- ci-workflow:end -->", doc_text, re.S)
    assert m and m.group(1) == printed, "docs/ci.md must show the workflow git pilot ci workflow prints"


def run_job(clone: Path, secrets: dict[str, str], runs: Path, tmp: Path) -> tuple[int, str]:
    """The workflow's steps after checkout and install, as the runner would run them."""
    failed, log = False, []
    runner_temp = tmp / f"runner-temp-{clone.name}"
    runner_temp.mkdir(exist_ok=True)
    for step in workflow()["jobs"]["checks"]["steps"]:
        if "run" not in step or step.get("name") == "Install git pilot":
            continue
        cond = step.get("if", "success()")
        if not {"success()": not failed, "success() || failure()": True, "always()": True}[cond]:
            continue
        env = {**os.environ, "RUNNER_TEMP": str(runner_temp), "RUNS": str(runs)}
        for key, value in step.get("env", {}).items():
            m = re.fullmatch(r"\$\{\{ secrets\.(\w+) \}\}", value)
            env[key] = secrets[m.group(1)] if m else value
        proc = subprocess.run(["sh", "-e", "-c", step["run"]], cwd=clone, env=env, capture_output=True,
                              text=True, timeout=120)
        log.append(f"## {step.get('name')}: exit {proc.returncode}\n{proc.stdout}{proc.stderr}")
        failed = failed or proc.returncode != 0
    assert not (runner_temp / "git-pilot-signing-key").exists()  # the last step removed the key
    return (1 if failed else 0), "\n".join(log)


def keygen(path: Path) -> Path:
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "ci", "-f", str(path)], check=True)
    return path


@pytest.mark.skipif(shutil.which("ssh-keygen") is None, reason="ssh-keygen is not installed")
def test_the_ci_job_signs_and_shares_and_a_teammate_reuses_its_passes(tmp_path: Path, pilot_on_path: Path) -> None:
    remote = tmp_path / "remote.git"
    git(tmp_path, "init", "-q", "--bare", str(remote))
    dev = make_repo(tmp_path / "dev", {".gitpilot.toml": CONFIG, "app.py": "x = 1\n"})
    git(dev, "remote", "add", "origin", str(remote))
    git(dev, "push", "-q", "origin", "main")
    key = keygen(tmp_path / "ci-key")
    secrets = {"GIT_PILOT_SIGNING_KEY": key.read_text()}
    # The teammate's setup from docs/ci.md: CI's public key, outside the work tree, trusted when signed.
    signers = tmp_path / "home-config" / "allowed_signers"
    signers.parent.mkdir()
    signers.write_text(f'git-pilot-ci namespaces="git-pilot" {key.with_suffix(".pub").read_text()}')
    git(dev, "config", "pilot.trust", "signed")
    git(dev, "config", "gpg.ssh.allowedSignersFile", str(signers))
    dev_runs, ci_runs = tmp_path / "dev-runs", tmp_path / "ci-runs"

    # CI on commit 1: it runs the check, signs the record and pushes it.
    ci = tmp_path / "ci"
    git(tmp_path, "clone", "-q", str(remote), str(ci))
    code, log = run_job(ci, secrets, ci_runs, tmp_path)
    assert code == 0, log
    assert ci_runs.read_text() == "ran\n"
    assert "pushed 1 check record(s) on 1 tree(s) to origin" in log
    tree = git(ci, "rev-parse", "HEAD^{tree}").strip()
    assert '"sig":"' in git(remote, "notes", "--ref=pilot/checks", "show", tree)
    # The teammate pulls and reuses CI's signed pass: nothing runs.
    pulled = run_pilot("share", "pull", cwd=dev)
    assert pulled.returncode == 0, pulled.stderr
    res = run_pilot("check", "--explain", cwd=dev, env={"RUNS": str(dev_runs)})
    assert res.returncode == 0
    assert "explain: unit: reused: pass recorded via remote origin" in res.stdout
    assert "by git-pilot-ci@users.noreply.github.com" in res.stdout and "(signature verified)" in res.stdout
    assert not dev_runs.exists()
    # A second CI job on the same commit (a fresh runner): CI's own signed pass is reused.
    ci2 = tmp_path / "ci2"
    git(tmp_path, "clone", "-q", str(remote), str(ci2))
    code, log = run_job(ci2, secrets, ci_runs, tmp_path)
    assert code == 0, log
    assert "(reused: passed" in log and ci_runs.read_text() == "ran\n"


def test_a_failing_ci_job_fails_and_still_shares_its_signed_record(tmp_path: Path, pilot_on_path: Path) -> None:
    remote = tmp_path / "remote.git"
    git(tmp_path, "init", "-q", "--bare", str(remote))
    seed = make_repo(tmp_path / "seed", {".gitpilot.toml": CONFIG, "fail": ""})
    git(seed, "push", "-q", str(remote), "main")
    ci = tmp_path / "ci"
    git(tmp_path, "clone", "-q", str(remote), str(ci))
    key = keygen(tmp_path / "ci-key")
    code, log = run_job(ci, {"GIT_PILOT_SIGNING_KEY": key.read_text()}, tmp_path / "runs", tmp_path)
    assert code == 1
    assert "## Run the checks: exit 1" in log and "## Push the signed results: exit 0" in log
    tree = git(ci, "rev-parse", "HEAD^{tree}").strip()
    body = git(remote, "notes", "--ref=pilot/checks", "show", tree)
    assert '"result":"fail"' in body and '"sig":"' in body
