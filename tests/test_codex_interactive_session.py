"""An interactive Codex session prints no session id: git pilot reads it from the rollout file
Codex writes under ``$CODEX_HOME/sessions`` (the working directory and the time tell which), so
the next ``run`` resumes that session instead of starting a new one."""

from __future__ import annotations

import json
import os
import stat
import sys
import time
from pathlib import Path

import pytest
from conftest import SAMPLES
from fake_agents.pilot import context_repo, pilot, session_record, tid_of

from gitpilot.agents.codex_files import rollout_session

TASK = "Raise the widget spin speed cap to 12000 rpm in widgets/speed.py"
SAMPLE = SAMPLES / "codex-rollouts-0.171.0" / "rollout-2026-11-30T12-18-07-01a22c64-19c5-7bb3-b9d6-a0c1f71f63c6.jsonl"


def _rollout(home: Path, sid: str, cwd: Path, when: float | None = None) -> Path:
    """A rollout file as Codex 0.171.0 writes it (the captured sample's first line), for ``cwd``."""
    meta = json.loads(SAMPLE.read_text(encoding="utf-8").splitlines()[0])
    meta["payload"].update({"id": sid, "session_id": sid, "cwd": str(cwd)})
    day = home / "sessions" / time.strftime("%Y/%m/%d", time.localtime(when or time.time()))
    day.mkdir(parents=True, exist_ok=True)
    path = day / f"rollout-{time.strftime('%Y-%m-%dT%H-%M-%S')}-{sid}.jsonl"
    path.write_text(json.dumps(meta) + "\n", encoding="utf-8")
    if when is not None:
        os.utime(path, (when, when))
    return path


def test_the_newest_rollout_of_this_directory_since_the_launch_names_the_session(tmp_path: Path) -> None:
    home, repo, other = tmp_path / "codex", tmp_path / "repo", tmp_path / "other"
    repo.mkdir()
    other.mkdir()
    since = time.time()
    _rollout(home, "old-session", repo, when=since - 3600)  # an earlier session in the same repo
    _rollout(home, "elsewhere", other)  # a session started meanwhile in another repository
    assert rollout_session(home, since, repo) is None
    _rollout(home, "01a22c64-aaaa-7bb3-b9d6-a0c1f71f63c6", repo)
    assert rollout_session(home, since, repo) == "01a22c64-aaaa-7bb3-b9d6-a0c1f71f63c6"
    (home / "sessions" / "junk.jsonl").write_text("not json\n")
    assert rollout_session(home / "missing", since, repo) is None


FAKE_CODEX = r'''#!{python}
import json, os, sys, time
args = sys.argv[1:]
samples = {samples!r}
with open(os.environ["FAKE_CODEX_LOG"], "a") as fh:
    fh.write(json.dumps(args) + "\n")
if args == ["--help"]:
    sys.stdout.write(open(os.path.join(samples, "cli-help", "codex-help.txt")).read().split("\n", 1)[1])
elif args == ["--version"]:
    print("codex-cli 0.171.0")
elif args and args[0] == "exec" and "--help" in args:
    sys.stdout.write(open(os.path.join(samples, "cli-help", "codex-exec-help.txt")).read().split("\n", 1)[1])
elif args and args[0] == "resume" and "--help" in args:
    sys.stdout.write(open(os.path.join(samples, "cli-help", "codex-resume-help.txt")).read().split("\n", 1)[1])
elif args and args[0] in ("exec", "review", "resume") and "--help" in args:
    print("Usage: codex " + args[0])
elif args and args[0] != "resume":  # an interactive session: Codex records it, prints no id
    day = os.path.join(os.environ["CODEX_HOME"], "sessions", time.strftime("%Y/%m/%d"))
    os.makedirs(day, exist_ok=True)
    meta = {{"type": "session_meta", "payload": {{"id": "01a22c64-beef-7bb3-b9d6-a0c1f71f63c6", "cwd": os.getcwd(),
            "originator": "codex_cli_rs", "cli_version": "0.171.0"}}}}
    with open(os.path.join(day, "rollout-x-01a22c64-beef-7bb3-b9d6-a0c1f71f63c6.jsonl"), "w") as fh:
        fh.write(json.dumps(meta) + "\n")
'''


def test_run_then_run_again_resumes_the_interactive_codex_session_it_recorded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    bindir, home, log = tmp_path / "bin", tmp_path / "codex-home", tmp_path / "codex.log"
    bindir.mkdir()
    fake = bindir / "codex"
    fake.write_text(FAKE_CODEX.format(python=sys.executable, samples=str(SAMPLES)))
    fake.chmod(fake.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("PATH", f"{bindir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("CODEX_HOME", str(home))
    monkeypatch.setenv("FAKE_CODEX_LOG", str(log))
    repo = context_repo(tmp_path / "repo")
    (repo / ".gitpilot.toml").write_text('[agent]\nmode = "interactive"\n')
    res = pilot(repo, "run", "--agent", "codex", TASK, monkeypatch=monkeypatch, capsys=capsys)
    assert res.code == 0, res.out + res.err
    sid = "01a22c64-beef-7bb3-b9d6-a0c1f71f63c6"
    assert session_record(repo, tid_of(TASK))["sessions"][-1]["session_id"] == sid
    res = pilot(repo, "run", "--agent", "codex", TASK, monkeypatch=monkeypatch, capsys=capsys)
    assert res.code == 0, res.out + res.err
    argvs = [json.loads(line) for line in log.read_text().splitlines()]
    resumed = [a for a in argvs if a and a[0] == "resume" and "--help" not in a]
    assert resumed and resumed[-1][1] == sid  # `codex resume <id> <continuation>`, not a new session
