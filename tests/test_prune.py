"""Capability pruning: proposals from real transcripts, every refusal, receipts, undo, Codex validation.

Claude transcripts and Codex rollouts are the ones captured from the real CLIs (fixtures/prune),
copied into the pinned HOME with their working directory rewritten to the test repository.
``codex`` is fixtures/prune/fake-codex first on PATH: it prints the captured real
``codex features list`` output with the enabled column following the config files.
"""

from __future__ import annotations

import json
import os
import re
import stat
import sys
from pathlib import Path

import pytest

from gitpilot.errors import PilotError
from gitpilot.optimizer import prune, receipts
from gitpilot.optimizer.receipts import sha256
from tests.conftest import REPO_ROOT, git, make_repo, run_pilot

FIX = REPO_ROOT / "fixtures" / "prune"
SAMPLE_CWD = "/home/dev/proj"


def home() -> Path:
    return Path(os.environ["HOME"])


def claude_sessions(
    repo: Path, n: int, *, used: tuple[str, ...] = (), start: int = 0, cwd: Path | None = None
) -> None:
    """``n`` real transcripts (17 deferred tools declared) as sessions of ``repo``; ``used`` tools called."""
    cwd = cwd or repo
    d = home() / ".claude" / "projects" / re.sub(r"[^A-Za-z0-9]", "-", str(cwd))
    d.mkdir(parents=True, exist_ok=True)
    text = (FIX / "claude-deferred-tools.jsonl").read_text().replace(SAMPLE_CWD, str(cwd))
    call = next(
        ln for ln in (FIX / "claude-bash-call.jsonl").read_text().splitlines() if '"type":"tool_use"' in ln
    )
    for i in range(start, start + n):
        extra = "".join(
            call.replace('"name":"Bash"', f'"name":"{t}"').replace(SAMPLE_CWD, str(cwd)) + "\n" for t in used
        )
        (d / f"0000000{i}-aaaa-4bbb-8ccc-dddddddddddd.jsonl").write_text(text + extra)


def codex_sessions(
    repo: Path, n: int, *, calls: tuple[tuple[str, str], ...] = (), subagents: int = 0
) -> None:
    """``n`` real exec rollouts (collaboration tools declared) of ``repo``; ``calls`` (namespace, name)."""
    d = home() / ".codex" / "sessions" / "2026" / "11" / "30"
    d.mkdir(parents=True, exist_ok=True)
    for kind, count in (("exec", n), ("subagent", subagents)):
        text = (FIX / f"codex-rollout-{kind}.jsonl").read_text().replace(SAMPLE_CWD, str(repo))
        for i in range(count):
            sid = f"01a22c64-0000-7000-8000-{kind[:3]}{i:09d}"
            body = re.sub(r'"id":"[0-9a-f-]{36}"', f'"id":"{sid}"', text, count=1)
            for ns, name in calls:
                body += (
                    json.dumps(
                        {
                            "type": "response_item",
                            "payload": {
                                "type": "function_call",
                                "namespace": ns,
                                "name": name,
                                "arguments": "{}",
                                "call_id": f"call_{i}",
                            },
                        }
                    )
                    + "\n"
                )
            (d / f"rollout-2026-11-30T12-00-00-{sid}.jsonl").write_text(body)


@pytest.fixture
def fake_codex(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    bindir = tmp_path / "codex-bin"
    bindir.mkdir()
    shim = bindir / "codex"
    shim.write_text(f'#!/bin/sh\nexec {sys.executable} {FIX / "fake-codex"} "$@"\n')
    shim.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bindir}{os.pathsep}{os.environ['PATH']}")
    return shim


def trust(repo: Path, extra: str = "") -> None:
    cfg = home() / ".codex" / "config.toml"
    cfg.parent.mkdir(parents=True, exist_ok=True)
    cfg.write_text(f'{extra}[projects."{repo}"]\ntrust_level = "trusted"\n')


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return make_repo(tmp_path / "repo").resolve()


def propose_json(repo: Path) -> dict[str, dict[str, object]]:
    proc = run_pilot("optimize", "propose", "--json", cwd=repo)
    assert proc.returncode == 0, proc.stderr
    return {p["name"]: p for p in json.loads(proc.stdout)["proposals"]}


def receipt_files(repo: Path) -> list[str]:
    d = repo / ".git" / "pilot" / "receipts"
    return sorted(p.name for p in d.iterdir()) if d.is_dir() else []


# -- proposals ---------------------------------------------------------------------------------
def test_unused_declared_tools_are_proposed_with_their_evidence(repo: Path) -> None:
    claude_sessions(repo, 5)
    claude_sessions(repo, 1, used=("WebFetch",), start=5)
    found = propose_json(repo)
    assert found["claude-tool-WebSearch"]["evidence"] == "declared in 6 of 6 Claude sessions, used in 0"
    assert found["claude-tool-WebSearch"]["ready"] is True
    assert "claude-tool-WebFetch" not in found  # called once
    assert "claude-tool-NotebookEdit" not in found  # declared, unused, but an editing tool: protected
    text = run_pilot("optimize", "propose", cwd=repo).stdout
    assert "a proposal needs 5 sessions ([optimizer] prune_min_sessions)" in text
    assert (
        'claude-tool-CronCreate: add "CronCreate" to permissions.deny in .claude/settings.local.json' in text
    )


def test_sessions_of_other_directories_do_not_count(repo: Path, tmp_path: Path) -> None:
    claude_sessions(repo, 5, cwd=tmp_path / "elsewhere")
    claude_sessions(repo, 5, cwd=Path(str(repo) + "2"))  # a sibling whose name starts the same
    assert propose_json(repo) == {}
    claude_sessions(repo, 5, cwd=repo / "sub")  # sessions started in a subdirectory do count
    assert propose_json(repo)["claude-tool-WebSearch"]["sessions"] == 5


def test_threshold_comes_from_the_config(repo: Path) -> None:
    claude_sessions(repo, 2)
    assert propose_json(repo)["claude-tool-WebSearch"]["ready"] is False
    (repo / ".gitpilot.toml").write_text("[optimizer]\nprune_min_sessions = 2\n")
    assert propose_json(repo)["claude-tool-WebSearch"]["ready"] is True


# -- refusals ----------------------------------------------------------------------------------
def test_thin_evidence_is_refused_and_says_how_much(repo: Path) -> None:
    claude_sessions(repo, 2)
    proc = run_pilot("optimize", "apply", "claude-tool-WebSearch", cwd=repo)
    assert proc.returncode == 1
    assert "not enough evidence for claude-tool-WebSearch: declared in 2 of 2 Claude sessions" in proc.stderr
    assert "5 sessions are required ([optimizer] prune_min_sessions), the evidence spans 2" in proc.stderr
    assert not (repo / ".claude").exists() and receipt_files(repo) == []


def test_a_tracked_settings_file_is_refused(repo: Path) -> None:
    claude_sessions(repo, 5)
    settings = repo / ".claude" / "settings.local.json"
    settings.parent.mkdir()
    settings.write_text('{\n  "model": "opus"\n}\n')
    git(repo, "add", "-f", ".claude/settings.local.json")
    git(repo, "commit", "-q", "-m", "shared settings")
    proc = run_pilot("optimize", "apply", "claude-tool-WebSearch", cwd=repo)
    assert proc.returncode == 1 and "is tracked by git" in proc.stderr
    assert settings.read_text() == '{\n  "model": "opus"\n}\n' and receipt_files(repo) == []


@pytest.mark.parametrize("link", ["file", "directory"])
def test_a_symlinked_settings_file_is_refused(repo: Path, tmp_path: Path, link: str) -> None:
    claude_sessions(repo, 5)
    dotfiles = tmp_path / "dotfiles"
    dotfiles.mkdir()
    (dotfiles / "settings.local.json").write_text("{}\n")
    if link == "file":
        (repo / ".claude").mkdir()
        os.symlink(dotfiles / "settings.local.json", repo / ".claude" / "settings.local.json")
    else:
        os.symlink(dotfiles, repo / ".claude")
    proc = run_pilot("optimize", "apply", "claude-tool-WebSearch", cwd=repo)
    assert proc.returncode == 1 and "is a symlink" in proc.stderr
    assert (dotfiles / "settings.local.json").read_text() == "{}\n" and receipt_files(repo) == []


def test_a_conflicting_setting_is_refused(repo: Path) -> None:
    claude_sessions(repo, 5)
    shared = repo / ".claude" / "settings.json"
    shared.parent.mkdir()
    shared.write_text('{"permissions": {"allow": ["WebSearch(domain:docs.python.org)"]}}\n')
    proc = run_pilot("optimize", "apply", "claude-tool-WebSearch", cwd=repo)
    assert proc.returncode == 1
    assert "conflicts with an existing setting: .claude/settings.json allows" in proc.stderr
    assert not (repo / ".claude" / "settings.local.json").exists() and receipt_files(repo) == []
    assert "conflict: .claude/settings.json allows" in run_pilot("optimize", "propose", cwd=repo).stdout


def test_an_unknown_name_lists_the_current_proposals(repo: Path) -> None:
    claude_sessions(repo, 5)
    proc = run_pilot("optimize", "apply", "claude-tool-Read", cwd=repo)
    assert proc.returncode == 1 and "no proposal named 'claude-tool-Read'" in proc.stderr
    assert "claude-tool-WebSearch" in proc.stderr


# -- receipts and undo ----------------------------------------------------------------------------
ODD = (
    '{\r\n\t"hooks": {},\r\n\t"permissions": {\r\n\t\t"allow": ["Bash(ls:*)"]\r\n\t},'
    '\r\n\t"note": "caf\u00e9"\r\n}'
)


def test_receipt_is_written_before_the_change(repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    claude_sessions(repo, 5)
    settings = repo / ".claude" / "settings.local.json"
    settings.parent.mkdir()
    settings.write_bytes(ODD.encode())
    seen: list[str] = []
    real = prune.write_atomic

    def checking_write(path: Path, data: bytes) -> None:
        (rec,) = [p for p in (repo / ".git" / "pilot" / "receipts").glob("*.json")]
        body = json.loads(rec.read_text())
        assert settings.read_bytes() == ODD.encode()  # nothing changed yet
        assert body["original_sha256"] == sha256(ODD.encode()) and body["new_sha256"] == sha256(data)
        assert (rec.with_suffix(".orig")).read_bytes() == ODD.encode()
        seen.append(body["id"])
        real(path, data)

    monkeypatch.setattr(prune, "write_atomic", checking_write)
    receipt = prune.apply(repo, "claude-tool-WebSearch")
    assert seen == [receipt.id]


def test_apply_keeps_formatting_and_undo_restores_every_byte(repo: Path) -> None:
    claude_sessions(repo, 5)
    settings = repo / ".claude" / "settings.local.json"
    settings.parent.mkdir()
    settings.write_bytes(ODD.encode())
    settings.chmod(0o600)
    proc = run_pilot("optimize", "apply", "claude-tool-WebSearch", cwd=repo)
    assert proc.returncode == 0, proc.stderr
    rid = re.search(r"Receipt (\S+);", proc.stdout).group(1)  # type: ignore[union-attr]
    new = settings.read_bytes().decode()
    assert new == ODD.replace(
        '"allow": ["Bash(ls:*)"]', '"allow": ["Bash(ls:*)"],\r\n\t\t"deny": [\r\n\t\t\t"WebSearch"\r\n\t\t]'
    )
    assert json.loads(new)["permissions"]["deny"] == ["WebSearch"]
    assert stat.S_IMODE(settings.stat().st_mode) == 0o600
    undo = run_pilot("optimize", "undo", rid, cwd=repo)
    assert undo.returncode == 0, undo.stderr
    assert settings.read_bytes() == ODD.encode()
    assert stat.S_IMODE(settings.stat().st_mode) == 0o600
    again = run_pilot("optimize", "undo", rid, cwd=repo)
    assert again.returncode == 1 and "already undone" in again.stderr


def test_undo_of_a_created_file_removes_it_and_its_directory(repo: Path) -> None:
    claude_sessions(repo, 5)
    assert run_pilot("optimize", "apply", "claude-tool-CronCreate", cwd=repo).returncode == 0
    assert json.loads((repo / ".claude" / "settings.local.json").read_text()) == {
        "permissions": {"deny": ["CronCreate"]}
    }
    again = run_pilot("optimize", "apply", "claude-tool-CronCreate", cwd=repo)
    assert again.returncode == 1 and "claude-tool-CronCreate is already applied (receipt " in again.stderr
    proc = run_pilot("optimize", "undo", "claude-tool-CronCreate", cwd=repo)  # by proposal name
    assert proc.returncode == 0, proc.stderr
    assert not (repo / ".claude").exists()


def test_undo_is_refused_after_a_user_edit(repo: Path) -> None:
    claude_sessions(repo, 5)
    settings = repo / ".claude" / "settings.local.json"
    settings.parent.mkdir()
    settings.write_text('{\n  "model": "opus"\n}\n')
    receipt = prune.apply(repo, "claude-tool-WebSearch")
    edited = settings.read_text().replace('"opus"', '"sonnet"')
    settings.write_text(edited)
    proc = run_pilot("optimize", "undo", receipt.id, cwd=repo)
    assert proc.returncode == 1
    assert "changed since" in proc.stderr and "nothing restored" in proc.stderr
    assert 'Reconcile by hand: the change was: add "WebSearch" to permissions.deny' in proc.stderr
    assert str(repo / ".git" / "pilot" / "receipts" / f"{receipt.id}.orig") in proc.stderr
    assert settings.read_text() == edited
    assert receipts.Receipts(repo / ".git" / "pilot" / "receipts").load(receipt.id).state == receipts.APPLIED


def test_stacked_changes_are_undone_in_order(repo: Path) -> None:
    claude_sessions(repo, 5)
    first = prune.apply(repo, "claude-tool-WebSearch")
    second = prune.apply(repo, "claude-tool-WebFetch")
    with pytest.raises(PilotError, match=f"was changed again by {second.id}; undo that first"):
        prune.undo(repo, first.id)
    prune.undo(repo, second.id)
    prune.undo(repo, first.id)
    assert not (repo / ".claude").exists()


def test_a_damaged_receipt_is_named_and_never_blocks_another(repo: Path) -> None:
    claude_sessions(repo, 5)
    receipt = prune.apply(repo, "claude-tool-WebSearch")
    folder = repo / ".git" / "pilot" / "receipts"
    damaged = {"a-list": b"[]", "an-empty-object": b"{}", "another-id": receipt.to_json().encode(),
               "relative-file": receipt.to_json().replace(str(repo), ".").replace(receipt.id, "relative-file").encode()}
    for rid, body in damaged.items():
        (folder / f"{rid}.json").write_bytes(body)
        proc = run_pilot("optimize", "undo", rid, cwd=repo)
        assert proc.returncode == 1 and f"{rid}.json: not a readable receipt" in proc.stderr, proc.stderr
    missing = run_pilot("optimize", "undo", "no-such-name", cwd=repo)
    assert missing.returncode == 1 and "damaged, not read: a-list.json, an-empty-object.json" in missing.stderr
    proc = run_pilot("optimize", "undo", "claude-tool-WebSearch", cwd=repo)  # by name: damaged ones skipped
    assert proc.returncode == 0, proc.stderr
    assert not (repo / ".claude").exists()
    assert sorted(p.name for p in folder.glob("*.json")) == sorted([f"{r}.json" for r in damaged] +
                                                                    [f"{receipt.id}.json"])


# -- Claude MCP servers --------------------------------------------------------------------------
def test_claude_mcp_servers_by_scope(repo: Path) -> None:
    claude_sessions(repo, 4)
    claude_sessions(repo, 1, used=("mcp__issues__search",), start=4)
    (repo / ".mcp.json").write_text(
        json.dumps({"mcpServers": {"docs": {"command": "docs-mcp"}, "issues": {"command": "issues-mcp"}}})
    )
    (home() / ".claude.json").write_text(
        json.dumps({"projects": {str(repo): {"mcpServers": {"local-db": {"command": "db-mcp"}}}}})
    )
    found = propose_json(repo)
    assert "claude-mcp-issues" not in found  # its tool was called
    assert found["claude-mcp-docs"]["change"] == 'add "docs" to disabledMcpjsonServers'
    assert (
        found["claude-mcp-local-db"]["change"]
        == 'add "mcp__local-db" to permissions.deny (local-scope server)'
    )
    prune.apply(repo, "claude-mcp-docs")
    prune.apply(repo, "claude-mcp-local-db")
    doc = json.loads((repo / ".claude" / "settings.local.json").read_text())
    assert doc == {"disabledMcpjsonServers": ["docs"], "permissions": {"deny": ["mcp__local-db"]}}
    assert "claude-mcp-docs" not in propose_json(repo)  # in effect: no longer proposed


def test_an_approved_mcpjson_server_conflicts(repo: Path) -> None:
    claude_sessions(repo, 5)
    (repo / ".mcp.json").write_text(json.dumps({"mcpServers": {"docs": {"command": "docs-mcp"}}}))
    (repo / ".claude").mkdir()
    (repo / ".claude" / "settings.local.json").write_text('{"enabledMcpjsonServers": ["docs"]}')
    with pytest.raises(PilotError, match="lists 'docs' in enabledMcpjsonServers"):
        prune.apply(repo, "claude-mcp-docs")


# -- Codex ---------------------------------------------------------------------------------------
def test_codex_features_come_from_the_installed_codex(repo: Path, fake_codex: Path) -> None:
    codex_sessions(repo, 5, subagents=3)
    found = propose_json(repo)
    features = sorted(n for n in found if n.startswith("codex-feature-"))
    # enabled in the captured list and judged from the rollouts; web_search_request is off, never proposed
    assert features == [
        "codex-feature-goals",
        "codex-feature-image_generation",
        "codex-feature-multi_agent",
        "codex-feature-sleep_tool",
        "codex-feature-view_image",
    ]
    multi = found["codex-feature-multi_agent"]
    assert multi["sessions"] == 5  # subagent rollouts are not sessions
    assert multi["evidence"] == (
        "enabled (deprecated); 5 Codex sessions, its tools declared in 5, its tools called in 0"
    )


def test_a_used_codex_feature_is_not_proposed(repo: Path, fake_codex: Path) -> None:
    codex_sessions(repo, 5, calls=(("collaboration", "spawn_agent"), ("", "view_image")))
    found = propose_json(repo)
    assert "codex-feature-multi_agent" not in found and "codex-feature-view_image" not in found
    assert "codex-feature-goals" in found


def test_without_codex_there_are_no_feature_proposals(repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    codex_sessions(repo, 5)
    monkeypatch.setenv("PATH", "/usr/bin:/bin")
    proc = run_pilot("optimize", "propose", "--json", cwd=repo)
    data = json.loads(proc.stdout)
    assert not [p for p in data["proposals"] if p["kind"] == "feature"]
    assert data["notes"] and "codex is not installed" in data["notes"][0]


def test_codex_feature_applied_validated_and_undone(repo: Path, fake_codex: Path) -> None:
    codex_sessions(repo, 5)
    trust(repo)
    cfg = repo / ".codex" / "config.toml"
    cfg.parent.mkdir()
    original = (
        '# project settings\nmodel = "gpt-6.2-sol"  # keep\n\n[features]\nshell_snapshot = false # slow\n'
    )
    cfg.write_text(original)
    proc = run_pilot("optimize", "apply", "codex-feature-multi_agent", cwd=repo)
    assert proc.returncode == 0, proc.stderr
    assert cfg.read_text() == original + "multi_agent = false\n"
    assert (
        "multi_agent                              deprecated         false"
        in os.popen(f"cd {repo} && codex features list").read()
    )
    assert prune.undo(repo, "codex-feature-multi_agent").state == receipts.UNDONE
    assert cfg.read_text() == original


def test_codex_change_that_does_not_take_effect_is_rolled_back(repo: Path, fake_codex: Path) -> None:
    codex_sessions(repo, 5)  # the project is not trusted: codex ignores .codex/config.toml
    proc = run_pilot("optimize", "apply", "codex-feature-goals", cwd=repo)
    assert proc.returncode == 1
    assert "`codex features list` still reports goals enabled" in proc.stderr and "rolled back" in proc.stderr
    assert not (repo / ".codex").exists()
    (rec,) = receipts.Receipts(repo / ".git" / "pilot" / "receipts").all()
    assert rec.state == receipts.ROLLED_BACK and rec.name == "codex-feature-goals"


def test_codex_mcp_server_disabled_and_validated(repo: Path, fake_codex: Path) -> None:
    codex_sessions(repo, 5)
    trust(repo, extra='[mcp_servers.demo]\ncommand = "echo"\nargs = ["hello"]\n\n')
    found = propose_json(repo)
    assert found["codex-mcp-demo"]["change"] == "set [mcp_servers.demo] enabled = false"
    receipt = prune.apply(repo, "codex-mcp-demo")
    assert (repo / ".codex" / "config.toml").read_text() == "[mcp_servers.demo]\nenabled = false\n"
    assert receipt.state == receipts.APPLIED
    assert "codex-mcp-demo" not in propose_json(repo)


def test_an_explicitly_enabled_codex_feature_conflicts(repo: Path, fake_codex: Path) -> None:
    codex_sessions(repo, 5)
    trust(repo, extra="[features]\ngoals = true\n\n")
    with pytest.raises(
        PilotError, match=r"conflicts with an existing setting: .*sets \[features\] goals = true"
    ):
        prune.apply(repo, "codex-feature-goals")
    assert not (repo / ".codex").exists()


@pytest.mark.parametrize("call", [("", "mcp__tracker__create_issue"), ("mcp__tracker", "create_issue")])
def test_a_called_codex_mcp_server_is_not_proposed(repo: Path, fake_codex: Path, call: tuple[str, str]) -> None:
    codex_sessions(repo, 5, calls=(call,))
    trust(
        repo,
        extra='[mcp_servers.tracker]\ncommand = "tracker-mcp"\n\n[mcp_servers.unused]\ncommand = "x"\n\n',
    )
    found = propose_json(repo)
    assert "codex-mcp-tracker" not in found and found["codex-mcp-unused"]["ready"] is True


def test_claude_config_dir_is_honoured(repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    claude_sessions(repo, 5)  # under ~/.claude: not read once CLAUDE_CONFIG_DIR points elsewhere
    custom = tmp_path / "claude-config"
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(custom))
    assert propose_json(repo) == {}
    (custom / "projects").mkdir(parents=True)
    (home() / ".claude" / "projects").rename(custom / "projects" / "moved")
    for f in (custom / "projects" / "moved").iterdir():
        f.rename(custom / "projects" / f.name)
    assert "claude-tool-WebSearch" in propose_json(repo)
