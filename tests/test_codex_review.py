"""``git pilot codex review``: the native ``codex review --base B`` within the budget, driven through
a fake ``codex`` that records its argv and cwd and prints the captured real outputs."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from conftest import SAMPLES, git, make_repo
from fake_agents import FakeAgents, install
from fake_agents.fake_agent import read_sample
from fake_agents.pilot import pilot, session_record, state_record, task_files
from fake_agents.pilot import start_task as _start_task

from gitpilot.repo import Repo
from gitpilot.store.tasks import TaskStore

TASK = "Make the widget spin faster"
SUCCESS = "cli-help/codex-review-base-mock-success.txt"
LIMIT = "cli-help/codex-review-base-mock-usage-limit.txt"


def clean_review(fakes: FakeAgents, times: int | None = None) -> None:
    """A round that finds nothing: the real output with its findings block taken out (what codex
    prints when the review JSON has no findings: the overall explanation only)."""
    out, err, _ = read_sample(SUCCESS)
    head = out.split("Review comment:")[0].rstrip() + "\n"
    fakes.rule("codex", ["review", "--base"], stdout=head, stderr=err.split("codex\n")[0], exit=0, times=times)


@pytest.fixture
def fakes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> FakeAgents:
    return install(tmp_path, monkeypatch)


def repo_with(tmp_path: Path, config: str | None = None) -> Path:
    files = {"README.md": "# demo\n", "src/app.py": "X = 1\n", "src/b.py": "B = 1\n", "src/c.py": "C = 1\n"}
    if config is not None:
        files[".gitpilot.toml"] = config
    repo = make_repo(tmp_path / "repo", files)
    git(repo, "checkout", "-q", "-b", "feature")
    return repo


def start_task(repo: Path, monkeypatch: pytest.MonkeyPatch, text: str = TASK) -> str:
    return _start_task(repo, monkeypatch, text)


def small(repo: Path) -> None:
    (repo / "src/app.py").write_text("X = 2\n")


def normal(repo: Path) -> None:
    for name in ("app", "b", "c", "d"):
        (repo / f"src/{name}.py").write_text("Y = 2\n")


def reviews(fakes: FakeAgents) -> list[list[str]]:
    return [a for a in fakes.argvs("codex") if "review" in a]


def ledger(repo: Path, mechanism: str = "review") -> list[dict[str, object]]:
    path = repo / ".git" / "pilot" / "efficiency.jsonl"
    rows = [json.loads(ln) for ln in path.read_text().splitlines()] if path.exists() else []
    return [r for r in rows if r["mechanism"] == mechanism]


def test_a_round_runs_native_codex_review_in_the_repository_and_shows_only_the_review(
        tmp_path: Path, fakes: FakeAgents, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    repo = repo_with(tmp_path)
    tid = start_task(repo, monkeypatch)
    small(repo)
    monkeypatch.chdir(repo / "src")  # run from a subdirectory: codex still runs at the top
    res = pilot(repo / "src", "codex", "review", monkeypatch=monkeypatch, capsys=capsys)
    assert res.code == 0, res.err
    call = [c for c in fakes.calls("codex") if "review" in c["argv"] and "--help" not in c["argv"]][0]
    assert call["argv"] == ["review", "--base", "main"]  # exactly that: no model flag, no -C
    assert Path(call["cwd"]).resolve() == repo.resolve()
    assert call["env"]["GIT_PILOT_TASK"] == tid
    assert "- [P1] Example finding from mock" in res.out
    assert "codex review round 1 of 1 (small change against main): 1 finding(s)" in res.out
    assert "OpenAI Codex v0.171.0" not in res.out and "bubblewrap" not in res.out  # stderr stays in the log
    log = Path(res.out.strip().splitlines()[-1].split("full codex output: ")[1])
    assert "OpenAI Codex v0.171.0" in log.read_text()
    assert state_record(repo, tid)["review_rounds_used"] == 1
    launches = session_record(repo, tid)["launches"]
    assert [Path(launches[-1]["argv"][0]).name, *launches[-1]["argv"][1:]] == ["codex", "review", "--base", "main"]
    row = ledger(repo)[-1]
    assert row["task"] == tid and row["delivered"] > 0
    assert row["avoided"] == len(read_sample(SUCCESS)[1].encode())  # codex's stderr kept out


def test_the_budget_caps_the_rounds_and_the_rest_are_recorded_as_skipped(
        tmp_path: Path, fakes: FakeAgents, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    repo = repo_with(tmp_path)
    tid = start_task(repo, monkeypatch)
    small(repo)  # small: 1 round of max_rounds 2
    assert pilot(repo, "codex", "review", monkeypatch=monkeypatch, capsys=capsys).code == 0
    (repo / "src/app.py").write_text("X = 3\n")  # the agent fixed what it found
    again = pilot(repo, "codex", "review", monkeypatch=monkeypatch, capsys=capsys)
    assert again.code == 0
    assert "review budget spent: 1 of 1 round(s) used for this small change" in again.out
    assert len(reviews(fakes)) == 1
    assert state_record(repo, tid)["review_rounds_used"] == 1
    skipped = [r for r in ledger(repo) if r["facts"].get("rounds_skipped")]
    assert [r["facts"]["rounds_skipped"] for r in skipped] == [1]
    pilot(repo, "codex", "review", monkeypatch=monkeypatch, capsys=capsys)  # asked again: not counted twice
    assert len([r for r in ledger(repo) if r["facts"].get("rounds_skipped")]) == 1


def test_review_stops_early_when_a_round_finds_nothing(
        tmp_path: Path, fakes: FakeAgents, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    repo = repo_with(tmp_path, config="[reviewer]\nmax_rounds = 3\n")
    tid = start_task(repo, monkeypatch)
    (repo / "package.json").write_text("{}\n")  # high-risk: max_rounds = 3
    first = pilot(repo, "codex", "review", monkeypatch=monkeypatch, capsys=capsys)
    assert "round 1 of 3" in first.out and "1 finding(s)" in first.out
    assert "2 round(s) left" in first.out
    clean_review(fakes)
    (repo / "package.json").write_text('{"name": "x"}\n')
    second = pilot(repo, "codex", "review", monkeypatch=monkeypatch, capsys=capsys)
    assert "round 2 of 3" in second.out and ": 0 finding(s)" in second.out
    assert "round 2 found nothing: review done, stopping early (1 round(s) of the budget unused)" in second.out
    third = pilot(repo, "codex", "review", monkeypatch=monkeypatch, capsys=capsys)
    assert "review done: round 2 found nothing on this state; not run again" in third.out
    assert len(reviews(fakes)) == 2
    assert state_record(repo, tid)["review_rounds_used"] == 2
    record = json.loads(task_files(repo, tid)["review.json"])
    assert [(r["n"], r["findings"], r["clean"]) for r in record["rounds"]] == [(1, 1, False), (2, 0, True)]
    skipped = [r["facts"]["rounds_skipped"] for r in ledger(repo) if "rounds_skipped" in r["facts"]]
    assert skipped == [1]


def test_a_clean_first_round_of_a_normal_change_skips_the_second(
        tmp_path: Path, fakes: FakeAgents, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    repo = repo_with(tmp_path)
    start_task(repo, monkeypatch)
    normal(repo)
    clean_review(fakes)
    res = pilot(repo, "codex", "review", monkeypatch=monkeypatch, capsys=capsys)
    assert "round 1 of 2 (normal change against main): 0 finding(s)" in res.out
    assert "stopping early (1 round(s) of the budget unused)" in res.out
    assert pilot(repo, "codex", "review", monkeypatch=monkeypatch, capsys=capsys).out.startswith("review done")
    assert len(reviews(fakes)) == 1


def test_documentation_only_never_calls_codex(
        tmp_path: Path, fakes: FakeAgents, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    repo = repo_with(tmp_path)
    tid = start_task(repo, monkeypatch)
    (repo / "README.md").write_text("# demo\n\nBetter docs.\n")
    res = pilot(repo, "codex", "review", monkeypatch=monkeypatch, capsys=capsys)
    assert res.code == 0
    assert res.out.startswith("no review round: docs change against main (documentation only")
    assert fakes.calls("codex") == []  # not even a --help probe
    assert [r["facts"]["rounds_skipped"] for r in ledger(repo)] == [2]
    assert state_record(repo, tid)["review_rounds_used"] == 0


def test_a_failed_round_is_not_counted_and_says_why(
        tmp_path: Path, fakes: FakeAgents, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    repo = repo_with(tmp_path)
    tid = start_task(repo, monkeypatch)
    small(repo)
    fakes.rule("codex", ["review", "--base"], sample=LIMIT, times=1)
    res = pilot(repo, "codex", "review", monkeypatch=monkeypatch, capsys=capsys)
    assert res.code == 1
    assert "codex review round 1 failed (not counted): quota: You’ve hit your usage limit" in res.out
    assert state_record(repo, tid)["review_rounds_used"] == 0
    retry = pilot(repo, "codex", "review", monkeypatch=monkeypatch, capsys=capsys)  # the limit is over
    assert retry.code == 0 and "round 1 of 1" in retry.out


def test_without_codex_installed_it_says_so_in_one_line(
        tmp_path: Path, fakes: FakeAgents, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    repo = repo_with(tmp_path)
    small(repo)
    fakes.remove("codex")
    assert shutil.which("codex") is None  # and no real codex either
    res = pilot(repo, "codex", "review", monkeypatch=monkeypatch, capsys=capsys)
    assert res.code == 1
    assert res.err.strip() == ("git pilot: codex is not installed (not found on PATH); run the review "
                               "yourself: codex review --base main")


def test_outside_a_task_rounds_are_counted_per_branch(
        tmp_path: Path, fakes: FakeAgents, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    repo = repo_with(tmp_path)
    small(repo)
    assert "round 1 of 1" in pilot(repo, "codex", "review", monkeypatch=monkeypatch, capsys=capsys).out
    assert "review budget spent" in pilot(repo, "codex", "review", monkeypatch=monkeypatch, capsys=capsys).out
    git(repo, "checkout", "-q", "-b", "other-feature")  # another branch starts afresh
    assert "round 1 of 1" in pilot(repo, "codex", "review", monkeypatch=monkeypatch, capsys=capsys).out
    assert len(reviews(fakes)) == 2


def test_base_option_and_json_output(
        tmp_path: Path, fakes: FakeAgents, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    repo = repo_with(tmp_path)
    git(repo, "branch", "release", "main")
    start_task(repo, monkeypatch)
    small(repo)
    res = pilot(repo, "codex", "review", "--base", "release", "--json", monkeypatch=monkeypatch, capsys=capsys)
    data = json.loads(res.out)
    assert reviews(fakes)[-1] == ["review", "--base", "release"]
    assert (data["action"], data["round"], data["findings"], data["clean"]) == ("ran", 1, 1, False)
    assert data["budget"]["class"] == "small" and data["budget"]["base"] == "release"
    assert "[P1] Example finding from mock" in data["review"]


def test_finding_detection_follows_the_real_output_format() -> None:
    from gitpilot.review.codex import round_findings

    out, _, _ = read_sample(SUCCESS)
    assert round_findings(out) == 1
    assert round_findings("Two defects.\n\nFull review comments:\n\n- [P0] A — /x/a.py:1-1\n  a\n\n"
                          "- [P2] B — /x/b.py:5-7\n  b\n") == 2
    assert round_findings("Mock explanation.\n") == 0
    assert SAMPLES.is_dir()


@pytest.mark.parametrize("body", [b"{not json", b"[]", b"\xff\xfe", None])
def test_a_damaged_round_count_grants_no_round(
        tmp_path: Path, fakes: FakeAgents, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
        body: bytes | None) -> None:
    repo = repo_with(tmp_path)
    small(repo)
    assert "round 1 of 1" in pilot(repo, "codex", "review", monkeypatch=monkeypatch, capsys=capsys).out
    rounds = repo / ".git" / "pilot" / "review" / "rounds.json"
    if body is None:  # the file is fine, this branch's entry is not
        data = json.loads(rounds.read_text())
        body = json.dumps({key: {"rounds": "none yet"} for key in data}).encode()
    rounds.write_bytes(body)
    res = pilot(repo, "codex", "review", monkeypatch=monkeypatch, capsys=capsys)
    assert res.code == 0, res.err
    assert "review budget treated as spent:" in res.out and str(rounds) in res.out
    assert len(reviews(fakes)) == 1  # no second round
    assert rounds.read_bytes() == body  # left as it was: a fresh file would reset the count
    data = json.loads(pilot(repo, "codex", "review", "--json", monkeypatch=monkeypatch, capsys=capsys).out)
    assert data["action"] == "spent" and data["rounds_used"] == 1


def test_a_damaged_review_record_of_a_task_grants_no_round(
        tmp_path: Path, fakes: FakeAgents, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    repo = repo_with(tmp_path, config="[reviewer]\nmax_rounds = 3\n")
    tid = start_task(repo, monkeypatch)
    normal(repo)
    assert pilot(repo, "codex", "review", monkeypatch=monkeypatch, capsys=capsys).code == 0
    TaskStore(Repo.discover(repo)).write(tid, {"review.json": b'{"rounds": 3}'}, "test: damage")
    res = pilot(repo, "codex", "review", monkeypatch=monkeypatch, capsys=capsys)
    assert res.code == 0 and "review budget treated as spent: review.json of task" in res.out
    assert len(reviews(fakes)) == 1
    assert task_files(repo, tid)["review.json"] == b'{"rounds": 3}'
