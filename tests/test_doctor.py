"""``git pilot doctor``: a few lines saying what needs fixing; exit 0 when nothing does."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from conftest import git, make_repo
from fake_agents import install
from fake_agents.pilot import pilot


@pytest.fixture
def healthy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, pilot_on_path: Path) -> Path:
    """A repository with a valid config, hooks installed, both agents and git-pilot on PATH."""
    install(tmp_path, monkeypatch)
    repo = make_repo(
        tmp_path / "repo", {"README.md": "# r\n", ".gitpilot.toml": "[leanloop]\nenabled = true\n"}
    )
    monkeypatch.chdir(repo)
    from gitpilot.hooks.install import install as install_hooks
    from gitpilot.repo import Repo

    install_hooks(Repo.discover(repo))
    return repo


def test_a_healthy_setup_exits_0_with_one_line_per_check(
    healthy: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    res = pilot(healthy, "doctor", monkeypatch=monkeypatch, capsys=capsys)
    assert res.code == 0, res.out
    lines = res.out.splitlines()
    assert lines[-1] == "nothing needs fixing"
    assert len(lines) <= 8
    assert any(ln.startswith("ok") and "git pilot on PATH" in ln for ln in lines)
    claude = next(ln for ln in lines if "claude 2.1.197" in ln)
    for feature in ("resume (-p --resume)", "background resume", "session list", "stop", "allow-list"):
        assert feature in claude
    assert any("codex-cli 0.171.0" in ln and "review --base" in ln for ln in lines)
    assert any("hooks installed and current" in ln for ln in lines)
    assert any("config valid: .gitpilot.toml" in ln for ln in lines)


def test_each_problem_is_named_with_its_fix_and_the_exit_code_is_1(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    install(tmp_path, monkeypatch, agents=("codex",))
    monkeypatch.setenv("PATH", f"{tmp_path / 'fake-bin'}{os.pathsep}/usr/bin:/bin")
    repo = make_repo(
        tmp_path / "repo", {"README.md": "# r\n", ".gitpilot.toml": "[leanloop]\nenabeld = true\n"}
    )
    res = pilot(repo, "doctor", monkeypatch=monkeypatch, capsys=capsys)
    assert res.code == 1
    fixes = [ln for ln in res.out.splitlines() if ln.startswith("FIX")]
    text = "\n".join(fixes)
    assert "git-pilot is not on PATH" in text
    assert "claude: not installed" in text
    assert "hooks not installed" in text and "git pilot hooks install" in text
    assert "unknown key 'leanloop.enabeld'" in text
    assert res.out.splitlines()[-1] == f"{len(fixes)} thing(s) need fixing"
    data = json.loads(pilot(repo, "doctor", "--json", monkeypatch=monkeypatch, capsys=capsys).out)
    assert data["ok"] is False and sum(f["needs_fix"] for f in data["findings"]) == len(fixes)


def test_an_agent_cli_without_resume_is_reported_not_failed(
    healthy: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("FAKE_AGENT_HIDE", "--resume,stop")
    res = pilot(healthy, "doctor", monkeypatch=monkeypatch, capsys=capsys)
    claude = next(ln for ln in res.out.splitlines() if "claude 2.1.197" in ln)
    assert "cannot resume sessions" in claude and "stop" not in claude.split(":")[1].split(";")[0]
    assert res.code == 0


def test_a_large_flat_notes_tree_needs_rewriting_and_fix_fans_it_out(
    healthy: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # A flat tree of 300 notes, as libgit2 (or an old writer) leaves it.
    blob = git(healthy, "hash-object", "-w", "--stdin", input=b"pass\n").strip()
    entries = "".join(f"100644 blob {blob}\t{i:040x}\n" for i in range(300)).encode()
    tree = git(healthy, "mktree", input=entries).strip()
    commit = git(healthy, "commit-tree", tree, "-m", "flat notes").strip()
    git(healthy, "update-ref", "refs/notes/pilot/checks", commit)
    res = pilot(healthy, "doctor", monkeypatch=monkeypatch, capsys=capsys)
    assert res.code == 1
    assert "refs/notes/pilot/checks: 300 notes in a flat, un-fanned tree" in res.out
    assert "git pilot doctor --fix" in res.out
    res = pilot(healthy, "doctor", "--fix", monkeypatch=monkeypatch, capsys=capsys)
    assert res.code == 0, res.out
    assert "refs/notes/pilot/checks: 300 notes moved into the two-hex fan-out" in res.out
    top = git(healthy, "ls-tree", "refs/notes/pilot/checks").splitlines()
    assert top and all(" tree " in ln and len(ln.split("\t")[1]) == 2 for ln in top)
    assert git(healthy, "notes", "--ref=pilot/checks", "show", f"{7:040x}") == "pass\n"


def test_an_unreadable_notes_ref_is_reported(
    healthy: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    blob = git(healthy, "hash-object", "-w", "--stdin", input=b"not a commit\n").strip()
    git(healthy, "update-ref", "refs/notes/pilot/review", blob)
    res = pilot(healthy, "doctor", monkeypatch=monkeypatch, capsys=capsys)
    assert res.code == 1
    assert "refs/notes/pilot/review is unreadable" in res.out


def test_doctor_reports_each_installed_agent_with_its_version_and_features(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    install(tmp_path, monkeypatch, agents=("claude", "copilot", "pi"))
    repo = make_repo(tmp_path / "repo", {"README.md": "# r\n"})
    res = pilot(repo, "doctor", monkeypatch=monkeypatch, capsys=capsys)
    lines = res.out.splitlines()
    copilot = next(ln for ln in lines if "copilot GitHub Copilot CLI 1.0.102: " in ln)
    for words in ("resume (-p --resume)", "allow-list", "deny-list", "session ids", "JSON output"):
        assert words in copilot
    pi = next(ln for ln in lines if "pi 0.73.1: " in ln)
    assert "allow-list" in pi and "session ids" not in pi and "deny-list" not in pi
    assert "ok     not installed: codex, grok" in lines  # one line for the agents not installed
