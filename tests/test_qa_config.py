"""A broken ``.gitpilot.toml`` (or v0.4 ``.autopilot/config.json``) stops every command that reads
it with one line naming the file, the place and the problem; the hooks never fail a git
command for it; and no command rewrites the broken file.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from conftest import git, make_repo, pilot_env, run_pilot
from test_qa_support import Snapshot, assert_clear_error, standard_files

# Commands that read the configuration before doing their work.
READERS: tuple[tuple[str, ...], ...] = (
    ("check",),
    ("check", "--force"),
    ("check", "--only", "unit"),
    ("check", "--log", "unit"),
    ("capsule", "--task", "set up the widgets"),
    ("run", "--dry-run", "set up the widgets"),
    ("review-budget",),
    ("codex", "review"),
    ("codex", "plan"),
    ("sourcemap",),
    ("optimize", "propose"),
    ("config", "show"),
)

BROKEN: dict[str, tuple[bytes, tuple[str, ...]]] = {
    "syntax": (b'[[check]]\nname = "unit"\nrun = \n', (".gitpilot.toml:3:7: invalid TOML",)),
    "unclosed at end": (b"[leanloop]\nenabled = [", (".gitpilot.toml:2:12: invalid TOML",)),
    "wrong type": (b'[leanloop]\nenabled = "yes"\n[[check]]\nname = "unit"\nrun = "true"\n',
                   ("line 2", "leanloop.enabled", "true or false")),
    "check not a table array": (b'check = "make test"\n', ("line 1", "'check' must be an array of tables")),
    "check without run": (b'[[check]]\nname = "unit"\n', ("check 1 has no 'run'",)),
    "duplicate check": (b'[[check]]\nname = "u"\nrun = "true"\n[[check]]\nname = "u"\nrun = "false"\n',
                        ("two checks are named 'u'",)),
    "not utf-8": (b'[[check]]\nname = "caf\xe9"\nrun = "true"\n', ("not UTF-8",)),
}


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return make_repo(tmp_path / "repo", standard_files())


@pytest.mark.parametrize("case", sorted(BROKEN))
def test_every_reader_stops_with_file_place_and_key(repo: Path, case: str) -> None:
    data, needles = BROKEN[case]
    (repo / ".gitpilot.toml").write_bytes(data)
    before = Snapshot.take(repo)
    for args in READERS:
        assert_clear_error(run_pilot(*args, cwd=repo), 1, str(repo / ".gitpilot.toml"), *needles)
    # doctor reports it as one finding among its lines.
    doc = run_pilot("doctor", cwd=repo)
    assert doc.returncode == 1 and "config invalid" in doc.stdout and needles[0] in doc.stdout
    # init never overwrites it.
    assert_clear_error(run_pilot("init", "--no-hooks", cwd=repo), 1, "exists already")
    before.assert_unchanged(repo)
    assert (repo / ".gitpilot.toml").read_bytes() == data


def test_config_that_is_a_directory(repo: Path) -> None:
    (repo / ".gitpilot.toml").unlink()
    (repo / ".gitpilot.toml").mkdir()
    for args in READERS:
        assert_clear_error(run_pilot(*args, cwd=repo), 1, ".gitpilot.toml", "is a directory")
    assert_clear_error(run_pilot("init", cwd=repo), 1, "exists already")
    assert (repo / ".gitpilot.toml").is_dir()


def test_git_hooks_never_fail_a_git_command_for_a_broken_config(repo: Path) -> None:
    assert run_pilot("hooks", "install", cwd=repo).returncode == 0
    (repo / ".gitpilot.toml").write_text('[share]\ngate = "unit"\n')  # wrong type: a string, not a list
    git(repo, "add", ".gitpilot.toml")
    env = pilot_env({"GIT_PILOT_HOOKS_SYNC": "1"})
    commit = subprocess.run(["git", "commit", "-qm", "broken gate"], cwd=repo, env=env, capture_output=True)
    assert commit.returncode == 0 and b"Traceback" not in commit.stderr
    remote = repo.parent / "remote.git"
    git(repo.parent, "init", "-q", "--bare", str(remote))
    git(repo, "remote", "add", "origin", str(remote))
    push = subprocess.run(["git", "push", "-q", "origin", "main"], cwd=repo, env=env, capture_output=True)
    assert push.returncode == 0, push.stderr
    err = push.stderr.decode()
    assert "the push is not gated" in err and "share.gate" in err and "Traceback" not in err
    assert git(remote, "rev-parse", "main") == git(repo, "rev-parse", "main")


def test_optimize_reports_a_broken_config_instead_of_defaults(repo: Path) -> None:
    (repo / ".gitpilot.toml").write_text('[optimizer]\nloop_detection = "no"\n')
    for args in (("optimize", "learned"), ("optimize", "enable", "claude")):
        assert_clear_error(run_pilot(*args, cwd=repo), 1, ".gitpilot.toml", "optimizer.loop_detection")


# -- v0.4 JSON -----------------------------------------------------------------------------------
LEGACY_BROKEN: dict[str, tuple[str, tuple[str, ...]]] = {
    "invalid json": ('{"checks": [\n', ("config.json:2:1: invalid JSON",)),
    "not an object": ("[1, 2]", ("top level must be a JSON object",)),
    "checks not a list": ('{"checks": 5}', ("'checks' must be a list",)),
    "wrong type": ('{"leanloop": {"enabled": "yes"}}', ("leanloop.enabled", "true or false")),
}


@pytest.mark.parametrize("case", sorted(LEGACY_BROKEN))
def test_broken_v04_config_stops_readers_and_migrate_writes_nothing(tmp_path: Path, case: str) -> None:
    text, needles = LEGACY_BROKEN[case]
    repo = make_repo(tmp_path / "r", {"README.md": "# r\n", ".autopilot/config.json": text})
    for args in (("check",), ("config", "show"), ("config", "migrate")):
        assert_clear_error(run_pilot(*args, cwd=repo), 1, *needles)
    assert not (repo / ".gitpilot.toml").exists()
    assert sorted(p.name for p in repo.iterdir()) == [".autopilot", ".git", "README.md"]


def test_migrate_a_v04_config_with_nulls(tmp_path: Path) -> None:
    legacy = ('{"baseBranch": null, "checks": [{"name": "unit", "command": "true", "timeoutMinutes": null}, null],'
              ' "extra": {"a": null, "b": [1, null, "x"]}}')
    repo = make_repo(tmp_path / "r", {".autopilot/config.json": legacy})
    res = run_pilot("config", "migrate", cwd=repo)
    assert res.returncode == 0, res.stderr
    text = (repo / ".gitpilot.toml").read_text()
    assert "null" not in text and 'run = "true"' in text and 'b = [1, "x"]' in text
    show = run_pilot("config", "show", cwd=repo)
    assert show.returncode == 0 and "check 1: unit: true" in show.stdout
    assert (repo / ".autopilot" / "config.json").read_text() == legacy  # kept as it was
    again = run_pilot("config", "migrate", cwd=repo)
    assert_clear_error(again, 1, "exists already")


def test_a_config_that_is_a_dangling_symlink_is_named_not_ignored(repo: Path) -> None:
    (repo / ".gitpilot.toml").unlink()
    (repo / ".gitpilot.toml").symlink_to(repo.parent / "shared" / "gitpilot.toml")
    for args in READERS:
        assert_clear_error(run_pilot(*args, cwd=repo), 1, ".gitpilot.toml: a symlink to", "which does not exist")
    assert_clear_error(run_pilot("init", cwd=repo), 1, "exists already")
    assert (repo / ".gitpilot.toml").is_symlink()
