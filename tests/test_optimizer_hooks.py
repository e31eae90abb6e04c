"""``git pilot optimize enable|disable claude`` and the ``git pilot hook claude`` process."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from conftest import git, pilot_env, run_pilot

SETTINGS = Path(".claude") / "settings.local.json"
EVENTS = ["SessionStart", "UserPromptSubmit", "PostToolUse", "PostToolUseFailure", "Stop", "SessionEnd"]

USER_SETTINGS = {
    "permissions": {"allow": ["Bash(npm run lint)"], "deny": ["WebFetch"]},
    "hooks": {
        "PostToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "~/bin/log-bash.sh"}]}],
        "Notification": [{"hooks": [{"type": "command", "command": "notify-send claude"}]}],
    },
    "model": "opus",
}


def our_groups(settings: dict[str, Any], event: str) -> list[dict[str, Any]]:
    return [g for g in settings["hooks"].get(event, [])
            if any("hook claude" in h["command"] for h in g["hooks"])]


def test_enable_creates_the_settings_file_and_disable_removes_it(git_repo: Path) -> None:
    proc = run_pilot("optimize", "enable", "claude", cwd=git_repo)
    assert proc.returncode == 0, proc.stderr
    assert "added git pilot hooks to .claude/settings.local.json" in proc.stdout
    settings = json.loads((git_repo / SETTINGS).read_text())
    assert list(settings["hooks"]) == EVENTS
    command = settings["hooks"]["PostToolUse"][0]["hooks"][0]["command"]
    words = command.split()
    if words[0].startswith("PYTHONPATH="):  # this checkout is not the gitpilot installed here
        assert words.pop(0) == f"PYTHONPATH={Path(__file__).resolve().parents[1]}"
    assert words[0] == sys.executable and os.path.isabs(words[0])
    assert command.endswith("-m gitpilot hook claude")
    assert settings["hooks"]["PostToolUse"][0]["matcher"] == "Bash|Edit|Write|MultiEdit|NotebookEdit"

    proc = run_pilot("optimize", "disable", "claude", cwd=git_repo)
    assert proc.returncode == 0, proc.stderr
    assert not (git_repo / ".claude").exists()
    assert git(git_repo, "status", "--porcelain") == ""


@pytest.mark.parametrize("indent", [4, "\t"])
def test_enable_merges_and_disable_restores_the_users_file_byte_for_byte(git_repo: Path, indent: Any) -> None:
    path = git_repo / SETTINGS
    path.parent.mkdir()
    original = json.dumps(USER_SETTINGS, indent=indent) + "\n"
    path.write_text(original)

    assert run_pilot("optimize", "enable", "claude", cwd=git_repo).returncode == 0
    text = path.read_text()
    settings = json.loads(text)
    assert list(settings) == ["permissions", "hooks", "model"]  # key order kept
    assert settings["permissions"] == USER_SETTINGS["permissions"]
    # the user's own PostToolUse hook stays first and untouched; ours is appended
    assert settings["hooks"]["PostToolUse"][0] == USER_SETTINGS["hooks"]["PostToolUse"][0]
    assert len(our_groups(settings, "PostToolUse")) == 1
    assert settings["hooks"]["Notification"] == USER_SETTINGS["hooks"]["Notification"]
    first_indented = next(line for line in text.splitlines() if line[:1] in (" ", "\t"))
    assert first_indented.startswith(indent if isinstance(indent, str) else " " * indent)
    assert not first_indented.startswith((indent if isinstance(indent, str) else " " * indent) * 2)

    proc = run_pilot("optimize", "disable", "claude", cwd=git_repo)
    assert proc.returncode == 0, proc.stderr
    assert path.read_text() == original


def test_enable_twice_adds_nothing_the_second_time(git_repo: Path) -> None:
    assert run_pilot("optimize", "enable", "claude", cwd=git_repo).returncode == 0
    before = (git_repo / SETTINGS).read_bytes()
    proc = run_pilot("optimize", "enable", "claude", cwd=git_repo)
    assert proc.returncode == 0
    assert "already" in proc.stdout
    assert (git_repo / SETTINGS).read_bytes() == before


def test_disable_keeps_a_hook_the_user_added_after_enable(git_repo: Path) -> None:
    assert run_pilot("optimize", "enable", "claude", cwd=git_repo).returncode == 0
    path = git_repo / SETTINGS
    settings = json.loads(path.read_text())
    mine = {"matcher": "Edit", "hooks": [{"type": "command", "command": "prettier --write"}]}
    settings["hooks"]["PostToolUse"].append(mine)
    path.write_text(json.dumps(settings, indent=2) + "\n")

    assert run_pilot("optimize", "disable", "claude", cwd=git_repo).returncode == 0
    assert json.loads(path.read_text()) == {"hooks": {"PostToolUse": [mine]}}


def test_enable_refuses_a_tracked_settings_file(git_repo: Path) -> None:
    path = git_repo / SETTINGS
    path.parent.mkdir()
    path.write_text("{}\n")
    git(git_repo, "add", "-f", str(SETTINGS))
    git(git_repo, "commit", "-q", "-m", "settings")
    proc = run_pilot("optimize", "enable", "claude", cwd=git_repo)
    assert proc.returncode == 1
    assert proc.stderr.strip().splitlines() == [
        "git pilot: .claude/settings.local.json is tracked by git; git pilot only edits an untracked, "
        "personal settings file (git rm --cached .claude/settings.local.json first, or add the hooks "
        "by hand)"]
    assert path.read_text() == "{}\n"


@pytest.mark.parametrize("what", ["file", "dir"])
def test_enable_refuses_a_symlink(git_repo: Path, tmp_path: Path, what: str) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "settings.local.json").write_text('{"model": "opus"}\n')
    if what == "file":
        (git_repo / ".claude").mkdir()
        (git_repo / SETTINGS).symlink_to(elsewhere / "settings.local.json")
    else:
        (git_repo / ".claude").symlink_to(elsewhere)
    proc = run_pilot("optimize", "enable", "claude", cwd=git_repo)
    assert proc.returncode == 1
    assert "is a symlink" in proc.stderr and "Traceback" not in proc.stderr
    assert (elsewhere / "settings.local.json").read_text() == '{"model": "opus"}\n'


def test_enable_reports_broken_json_with_its_position(git_repo: Path) -> None:
    (git_repo / ".claude").mkdir()
    (git_repo / SETTINGS).write_text('{\n  "model": "opus",\n}\n')
    proc = run_pilot("optimize", "enable", "claude", cwd=git_repo)
    assert proc.returncode == 1
    assert f"{git_repo / SETTINGS}:3:1: invalid JSON" in proc.stderr


# ---------------------------------------------------------------------------------------
# the installed hook, as Claude Code runs it
# ---------------------------------------------------------------------------------------

def failure(repo: Path, tid: str, session: str = "s-1", cmd: str = "pytest -q") -> dict[str, Any]:
    return {"session_id": session, "transcript_path": "/dev/null", "cwd": str(repo), "prompt_id": "p",
            "hook_event_name": "PostToolUseFailure", "tool_name": "Bash",
            "tool_input": {"command": cmd, "description": "run tests"}, "tool_use_id": tid,
            "error": "Exit code 1\nFAILED tests/test_a.py::test_one - assert 1 == 2\n1 failed in 0.01s",
            "is_interrupt": False}


def installed_command(repo: Path) -> str:
    assert run_pilot("optimize", "enable", "claude", cwd=repo).returncode == 0
    settings = json.loads((repo / SETTINGS).read_text())
    return str(settings["hooks"]["PostToolUseFailure"][0]["hooks"][0]["command"])


def test_the_installed_command_works_from_a_plain_shell(git_repo: Path) -> None:
    command = installed_command(git_repo)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    outputs = []
    for i in range(3):
        proc = subprocess.run(["sh", "-c", command], cwd=git_repo / ".claude", env=env,
                              input=json.dumps(failure(git_repo, f"t{i}")).encode(), capture_output=True)
        assert proc.returncode == 0, proc.stderr
        outputs.append(proc.stdout.decode())
    assert outputs[:2] == ["", ""]
    assert "has now failed 3 times" in json.loads(outputs[2])["hookSpecificOutput"]["additionalContext"]


def test_hook_outside_a_repository_is_silent(tmp_path: Path) -> None:
    payload = failure(tmp_path, "t1")
    proc = run_pilot("hook", "claude", cwd=tmp_path, input=json.dumps(payload).encode())
    assert (proc.returncode, proc.stdout, proc.stderr) == (0, "", "")


@pytest.mark.parametrize("stdin", [b"", b"not json", b"[1, 2]", b'{"hook_event_name": "PostToolUse"}'])
def test_hook_with_malformed_input_exits_0_silently(git_repo: Path, stdin: bytes) -> None:
    proc = run_pilot("hook", "claude", cwd=git_repo, input=stdin)
    assert (proc.returncode, proc.stdout, proc.stderr) == (0, "", "")


def test_hook_does_nothing_when_loop_detection_is_off(git_repo: Path) -> None:
    (git_repo / ".gitpilot.toml").write_text("[optimizer]\nloop_detection = false\n")
    for i in range(4):
        payload = json.dumps(failure(git_repo, f"t{i}")).encode()
        proc = run_pilot("hook", "claude", cwd=git_repo, input=payload)
        assert (proc.returncode, proc.stdout) == (0, "")
    assert not (git_repo / ".git" / "pilot" / "loops").exists()


def test_hook_with_a_broken_config_uses_defaults(git_repo: Path) -> None:
    (git_repo / ".gitpilot.toml").write_text("[optimizer\nloop_threshold = \n")
    outs = [run_pilot("hook", "claude", cwd=git_repo, input=json.dumps(failure(git_repo, f"t{i}")).encode())
            for i in range(3)]
    assert [p.returncode for p in outs] == [0, 0, 0]
    assert outs[2].stdout and not outs[1].stdout


def test_threshold_and_configured_checks_come_from_gitpilot_toml(git_repo: Path) -> None:
    (git_repo / ".gitpilot.toml").write_text(
        '[optimizer]\nloop_threshold = 2\n\n[[check]]\nname = "unit"\nrun = "./scripts/unit.sh --fast"\n')
    first = run_pilot("hook", "claude", cwd=git_repo,
                      input=json.dumps(failure(git_repo, "t1", cmd="./scripts/unit.sh --fast -v")).encode())
    second = run_pilot("hook", "claude", cwd=git_repo,
                       input=json.dumps(failure(git_repo, "t2", cmd="./scripts/unit.sh --fast")).encode())
    assert first.stdout == ""
    context = json.loads(second.stdout)["hookSpecificOutput"]["additionalContext"]
    assert context.startswith("git pilot: `check:unit` has now failed 2 times")


def test_state_of_a_linked_worktree_lives_in_the_common_dir(git_repo: Path, tmp_path: Path) -> None:
    wt = tmp_path / "wt"
    git(git_repo, "worktree", "add", "-q", str(wt), "-b", "side")
    sub = wt / "pkg"
    sub.mkdir()
    proc = run_pilot("hook", "claude", cwd=sub, input=json.dumps(failure(sub, "t1", session="wt-s")).encode())
    assert proc.returncode == 0
    state = json.loads((git_repo / ".git" / "pilot" / "loops" / "wt-s.json").read_text())
    assert state["seen"] == ["t1"]
    assert not (wt / ".git").is_dir()


def _spawn(repo: Path, payload: dict[str, Any]) -> subprocess.Popen[bytes]:
    proc = subprocess.Popen([sys.executable, "-m", "gitpilot", "hook", "claude"], cwd=repo,
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            env=pilot_env())
    assert proc.stdin is not None
    proc.stdin.write(json.dumps(payload).encode())
    proc.stdin.close()
    return proc


def test_concurrent_hooks_for_one_session_lose_no_update(git_repo: Path) -> None:
    procs = [_spawn(git_repo, failure(git_repo, f"par-{i}", session="par")) for i in range(8)]
    outs = [(p.wait(timeout=60), p.stdout.read() if p.stdout else b"") for p in procs]
    assert all(code == 0 for code, _ in outs)
    state = json.loads((git_repo / ".git" / "pilot" / "loops" / "par.json").read_text())
    assert sorted(state["seen"]) == sorted(f"par-{i}" for i in range(8))
    assert state["turn"]["tools"] == 8
    assert state["turn"]["checks"]["pytest"]["streak"] == 8
    # exactly one redirect and one notice among the eight, whichever processes won the lock
    texts = [json.loads(o) for _, o in outs if o.strip()]
    assert sum("hookSpecificOutput" in t for t in texts) == 1
    assert sum("systemMessage" in t for t in texts) == 1


def test_concurrent_duplicate_deliveries_count_once(git_repo: Path) -> None:
    procs = [_spawn(git_repo, failure(git_repo, "same-id", session="dup")) for _ in range(6)]
    assert [p.wait(timeout=60) for p in procs] == [0] * 6
    state = json.loads((git_repo / ".git" / "pilot" / "loops" / "dup.json").read_text())
    assert state["seen"] == ["same-id"]
    assert state["turn"]["tools"] == 1


def test_session_end_removes_the_session_state(git_repo: Path) -> None:
    payload = json.dumps(failure(git_repo, "t1", session="end")).encode()
    run_pilot("hook", "claude", cwd=git_repo, input=payload)
    state = git_repo / ".git" / "pilot" / "loops" / "end.json"
    assert state.exists()
    end = {"session_id": "end", "cwd": str(git_repo), "hook_event_name": "SessionEnd", "reason": "other"}
    assert run_pilot("hook", "claude", cwd=git_repo, input=json.dumps(end).encode()).returncode == 0
    assert not state.exists()


def test_hook_path_imports_no_heavy_module(git_repo: Path) -> None:
    probe = (
        "import sys\n"
        "from gitpilot.cli import main\n"
        "code = main(['hook', 'claude'])\n"
        "heavy = sorted(m for m in sys.modules if m.split('.')[0] in "
        "{'click', 'pygit2', 'tomlkit', 'regex', 'markdown_it', 'colorama', 'blake3'})\n"
        "sys.stderr.write(repr((code, heavy)))\n"
    )
    (git_repo / ".gitpilot.toml").write_text("[optimizer]\nloop_detection = true\nlearn = true\n")
    for payload in (failure(git_repo, "t1"), {"session_id": "s-1", "cwd": str(git_repo),
                                                "hook_event_name": "SessionStart", "source": "startup"}):
        proc = subprocess.run([sys.executable, "-c", probe], cwd=git_repo, input=json.dumps(payload).encode(),
                              capture_output=True, env=pilot_env())
        assert proc.stderr.decode() == "(0, [])"



def test_session_start_injects_the_source_map_only_when_enabled(git_repo: Path) -> None:
    (git_repo / "pkg").mkdir()
    (git_repo / "pkg" / "calc.py").write_text("def add(a, b):\n    return a + b\n\n\nclass Calculator:\n"
                                              "    pass\n")
    git(git_repo, "add", "-A")
    git(git_repo, "commit", "-q", "-m", "code")
    start = json.dumps({"session_id": "sm", "cwd": str(git_repo), "hook_event_name": "SessionStart",
                        "source": "startup"}).encode()
    off = run_pilot("hook", "claude", cwd=git_repo, input=start)
    assert (off.returncode, off.stdout) == (0, "")
    (git_repo / ".gitpilot.toml").write_text("[optimizer]\nsourcemap_inject = true\n")
    on = run_pilot("hook", "claude", cwd=git_repo, input=start)
    assert on.returncode == 0, on.stderr
    context = json.loads(on.stdout)["hookSpecificOutput"]["additionalContext"]
    assert context.startswith("# Source map")
    assert "pkg/\n  calc.py: add(), Calculator" in context


def test_enable_keeps_the_settings_file_out_of_commits_and_disable_undoes_it(git_repo: Path) -> None:
    exclude = git_repo / ".git" / "info" / "exclude"
    before = exclude.read_bytes() if exclude.exists() else b""
    assert run_pilot("optimize", "enable", "claude", cwd=git_repo).returncode == 0
    assert git(git_repo, "status", "--porcelain") == ""  # the new file is ignored, not untracked
    assert run_pilot("optimize", "disable", "claude", cwd=git_repo).returncode == 0
    assert (exclude.read_bytes() if exclude.exists() else b"") == before


def test_enable_leaves_ignore_rules_alone_when_the_file_is_already_ignored(git_repo: Path) -> None:
    (git_repo / ".gitignore").write_text(".claude/settings.local.json\n")
    git(git_repo, "add", ".gitignore")
    git(git_repo, "commit", "-q", "-m", "ignore")
    exclude = git_repo / ".git" / "info" / "exclude"
    before = exclude.read_bytes() if exclude.exists() else b""
    assert run_pilot("optimize", "enable", "claude", cwd=git_repo).returncode == 0
    assert (exclude.read_bytes() if exclude.exists() else b"") == before


def test_a_damaged_manifest_or_a_latin1_exclude_file_neither_crashes_nor_keeps_our_hooks(git_repo: Path) -> None:
    exclude = git_repo / ".git" / "info" / "exclude"
    exclude.parent.mkdir(exist_ok=True)
    exclude.write_bytes(b"# caf\xe9\n/build\n")
    manifest = git_repo / ".git" / "pilot" / "claude-hooks.json"
    user = {"hooks": {"Notification": [{"hooks": [{"type": "command", "command": "notify-send claude"}]}]}}
    (git_repo / SETTINGS).parent.mkdir()
    (git_repo / SETTINGS).write_text(json.dumps(user) + "\n")
    for damage in ([1], {str(git_repo / SETTINGS): 7}, {str(git_repo / SETTINGS): {"added": [5, {"group": 3}]}}):
        proc = run_pilot("optimize", "enable", "claude", cwd=git_repo)
        assert proc.returncode == 0, proc.stderr
        manifest.write_text(json.dumps(damage))
        proc = run_pilot("optimize", "disable", "claude", cwd=git_repo)
        assert proc.returncode == 0, proc.stderr
        assert "removed git pilot hooks" in proc.stdout
        settings = json.loads((git_repo / SETTINGS).read_text())
        assert all(not our_groups(settings, e) for e in EVENTS)
        assert settings["hooks"]["Notification"] == user["hooks"]["Notification"]
        assert exclude.read_bytes().startswith(b"# caf\xe9\n/build\n")


def test_enable_with_a_broken_config_fails_and_writes_nothing(git_repo: Path) -> None:
    (git_repo / ".gitpilot.toml").write_text("[optimizer]\nlearn = 1\n")
    proc = run_pilot("optimize", "enable", "claude", cwd=git_repo)
    assert proc.returncode == 1 and "optimizer.learn" in proc.stderr and "Traceback" not in proc.stderr
    assert not (git_repo / ".claude").exists()
    assert not (git_repo / ".git" / "pilot" / "claude-hooks.json").exists()


# Bytes a JSON parser and writer would not give back: CRLF line ends, an odd indentation, a
# number written as 1e3, \u escapes and an escaped slash, a duplicate key (the last one wins
# for Claude Code, the first is still the user's text), no final newline.
AWKWARD_SETTINGS = (
    b'{\r\n   "model":  "opus",\r\n   "cleanupPeriodDays": 1e3,\r\n'
    b'   "statusLine": {"type": "command", "command": "echo \\u00e9t\\u00e9 \\/ ok"},\r\n'
    b'   "model": "sonnet"\r\n}'
)


def test_disable_restores_an_awkward_file_byte_for_byte(git_repo: Path) -> None:
    path = git_repo / SETTINGS
    path.parent.mkdir()
    path.write_bytes(AWKWARD_SETTINGS)
    path.chmod(0o600)
    assert run_pilot("optimize", "enable", "claude", cwd=git_repo).returncode == 0
    assert path.read_bytes() != AWKWARD_SETTINGS and our_groups(json.loads(path.read_text()), "Stop")

    proc = run_pilot("optimize", "disable", "claude", cwd=git_repo)
    assert proc.returncode == 0, proc.stderr
    assert "removed git pilot hooks from .claude/settings.local.json: " + ", ".join(EVENTS) in proc.stdout
    assert path.read_bytes() == AWKWARD_SETTINGS
    assert path.stat().st_mode & 0o777 == 0o600
    assert git(git_repo, "status", "--porcelain") == "?? .claude/\n"  # the user's own file, as before


def test_disable_after_an_edit_keeps_the_edit_and_removes_only_our_hooks(git_repo: Path) -> None:
    path = git_repo / SETTINGS
    path.parent.mkdir()
    path.write_bytes(AWKWARD_SETTINGS)
    assert run_pilot("optimize", "enable", "claude", cwd=git_repo).returncode == 0
    settings = json.loads(path.read_text())
    settings["theme"] = "dark"  # the user changed something else meanwhile
    path.write_text(json.dumps(settings, indent=3))

    assert run_pilot("optimize", "disable", "claude", cwd=git_repo).returncode == 0
    after = json.loads(path.read_text())
    assert after == {"model": "sonnet", "cleanupPeriodDays": 1000.0,
                     "statusLine": {"type": "command", "command": "echo été / ok"}, "theme": "dark"}


def test_a_second_enable_after_an_edit_never_restores_our_hooks(git_repo: Path) -> None:
    """enable, hand edit, enable again (adds nothing new here), disable: our hooks are gone."""
    path = git_repo / SETTINGS
    path.parent.mkdir()
    path.write_bytes(AWKWARD_SETTINGS)
    assert run_pilot("optimize", "enable", "claude", cwd=git_repo).returncode == 0
    settings = json.loads(path.read_text())
    del settings["hooks"]["Stop"]  # the user drops one of ours; a second enable puts it back
    path.write_text(json.dumps(settings, indent=2))
    assert run_pilot("optimize", "enable", "claude", cwd=git_repo).returncode == 0
    assert our_groups(json.loads(path.read_text()), "Stop")

    assert run_pilot("optimize", "disable", "claude", cwd=git_repo).returncode == 0
    after = json.loads(path.read_text())
    assert "hooks" not in after and after["model"] == "sonnet"
