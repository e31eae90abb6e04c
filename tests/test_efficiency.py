"""The efficiency ledger and report: appends under a lock, per-mechanism and total sums, the
token estimate labelled as such, per-task views, malformed lines skipped, quiet checks recorded."""

from __future__ import annotations

import json
import multiprocessing
from pathlib import Path

import pytest
from conftest import make_repo, run_pilot

from gitpilot import efficiency
from gitpilot.repo import Repo


def ledger(repo: Path) -> list[dict[str, object]]:
    path = repo / ".git" / "pilot" / "efficiency.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def test_record_appends_one_json_line_per_event(git_repo: Path) -> None:
    repo = Repo.discover(git_repo)
    assert efficiency.record(repo, "capsule", 1200, 48000, task="abc123", sources=7)
    assert efficiency.record(repo, "quiet-checks", 90, 5000)
    rows = ledger(git_repo)
    assert [(r["mechanism"], r["delivered"], r["avoided"], r["task"]) for r in rows] == [
        ("capsule", 1200, 48000, "abc123"), ("quiet-checks", 90, 5000, None)]
    assert rows[0]["facts"] == {"sources": 7}


def test_record_takes_the_task_from_the_agent_environment(git_repo: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GIT_PILOT_TASK", "f00dfeed" * 8)
    efficiency.record(Repo.discover(git_repo), "delta-resume", 400, 30000)
    assert ledger(git_repo)[0]["task"] == "f00dfeed" * 8


def test_record_never_raises_when_the_ledger_cannot_be_written(git_repo: Path) -> None:
    (git_repo / ".git" / "pilot").mkdir(exist_ok=True)
    (git_repo / ".git" / "pilot" / "efficiency.jsonl").mkdir()  # a directory where the file should be
    assert efficiency.record(Repo.discover(git_repo), "capsule", 1, 2) is False


def _append_many(root: str, worker: int) -> None:
    repo = Repo.discover(root)
    for i in range(50):
        efficiency.record(repo, "capsule", worker, i, task=f"w{worker}", pad="x" * 3000)


def test_concurrent_writers_never_interleave_lines(git_repo: Path) -> None:
    ctx = multiprocessing.get_context("fork")
    procs = [ctx.Process(target=_append_many, args=(str(git_repo), w)) for w in range(4)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(30)
    rows = ledger(git_repo)  # every line parses: no torn or interleaved writes
    assert len(rows) == 200
    assert sorted({r["task"] for r in rows}) == ["w0", "w1", "w2", "w3"]


def _fill(repo_path: Path) -> None:
    repo = Repo.discover(repo_path)
    efficiency.record(repo, "capsule", 2000, 38000, task="aaaa1111")
    efficiency.record(repo, "capsule", 1000, 9000, task="bbbb2222")
    efficiency.record(repo, "quiet-checks", 400, 99600, task="aaaa1111")
    efficiency.record(repo, "review", 0, 0, task="aaaa1111", rounds_skipped=2)
    efficiency.record(repo, "plan", 120, 0, task="bbbb2222", plans_skipped=1)


def test_report_sums_per_mechanism_and_in_total_with_a_labelled_estimate(git_repo: Path) -> None:
    _fill(git_repo)
    with open(git_repo / ".git" / "pilot" / "efficiency.jsonl", "a") as fh:
        fh.write("not json\n{\"mechanism\": 5}\n")  # unknown lines are skipped
    res = run_pilot("efficiency", "--json", cwd=git_repo)
    assert res.returncode == 0, res.stderr
    data = json.loads(res.stdout)
    capsule = data["mechanisms"]["capsule"]
    assert (capsule["events"], capsule["delivered_bytes"], capsule["avoided_bytes"]) == (2, 3000, 47000)
    assert capsule["kept_out_percent"] == 94.0
    assert capsule["avoided_tokens_estimate"] == 47000 // 4
    total = data["total"]
    assert (total["events"], total["delivered_bytes"], total["avoided_bytes"]) == (5, 3520, 146600)
    assert data["mechanisms"]["review"]["counts"] == {"rounds_skipped": 2}
    assert data["mechanisms"]["plan"]["counts"] == {"plans_skipped": 1}
    assert data["bytes_per_token"] == 4
    assert "estimate" in data["note"] and "not provider billing" in data["note"]
    text = run_pilot("efficiency", cwd=git_repo).stdout
    lines = text.splitlines()
    assert lines[0].split() == ["mechanism", "events", "delivered", "kept", "out", "kept", "out", "%",
                                "~tokens", "kept", "out"]
    assert [ln.split()[0] for ln in lines[1:6]] == ["capsule", "plan", "quiet-checks", "review", "total"]
    assert lines[1].split()[1:] == ["2", "2.9", "KiB", "45.9", "KiB", "94.0%", "11,750"]
    assert "review: rounds skipped 2" in lines
    assert "not provider billing" in text and "local only" in text


def test_report_per_task_and_for_one_task(git_repo: Path) -> None:
    _fill(git_repo)
    data = json.loads(run_pilot("efficiency", "--json", "--task", cwd=git_repo).stdout)
    assert sorted(data["tasks"]) == ["aaaa1111", "bbbb2222"]
    assert data["tasks"]["bbbb2222"]["total"]["delivered_bytes"] == 1120
    one = json.loads(run_pilot("efficiency", "--json", "--task", "aaaa", cwd=git_repo).stdout)
    assert sorted(one["mechanisms"]) == ["capsule", "quiet-checks", "review"]
    assert one["total"]["avoided_bytes"] == 38000 + 99600
    text = run_pilot("efficiency", "--task", cwd=git_repo).stdout
    assert "task aaaa1111:" in text and "task bbbb2222:" in text


def test_an_empty_ledger_says_so(git_repo: Path) -> None:
    res = run_pilot("efficiency", cwd=git_repo)
    assert res.returncode == 0
    assert res.stdout.startswith("no efficiency events recorded yet")


def test_quiet_checks_record_what_was_shown_and_what_stayed_in_the_log(tmp_path: Path) -> None:
    noisy = "python3 -c \"import sys; [print('line', i) for i in range(2000)]\""
    failing = "python3 -c \"import sys; [print('out', i) for i in range(500)]; sys.exit(3)\""
    config = (f"[[check]]\nname = 'noisy'\nrun = {json.dumps(noisy)}\n"
              f"[[check]]\nname = 'bad'\nrun = {json.dumps(failing)}\n")
    repo = make_repo(tmp_path / "repo", {".gitpilot.toml": config})
    res = run_pilot("check", cwd=repo)
    assert res.returncode == 1
    rows = [r for r in ledger(repo) if r["mechanism"] == "quiet-checks"]
    assert len(rows) == 1
    row = rows[0]
    facts = row["facts"]
    assert isinstance(facts, dict)
    logs = sorted((repo / ".git" / "pilot" / "checks").glob("*/*/*.log"))
    assert facts["log_bytes"] == sum(p.stat().st_size for p in logs)
    assert (facts["checks"], facts["failed"]) == (2, 1)
    assert row["delivered"] < len(res.stdout.encode()) + 100  # about what was printed, not the logs
    assert row["avoided"] > 0.8 * int(facts["log_bytes"])
    # A cache hit runs nothing: no new event.
    run_pilot("check", "--only", "noisy", cwd=repo)
    assert len([r for r in ledger(repo) if r["mechanism"] == "quiet-checks"]) == 1
