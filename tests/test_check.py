"""git pilot check: quiet output, logs on disk, reuse by tree id through git notes."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

from conftest import git, make_repo, run_pilot

CONFIG = """
[[check]]
name = "unit"
run = "echo unit-start; echo '3 passed in 0.1s'"

[[check]]
name = "lint"
run = "sh lint.sh"
"""

LINT_FAIL = """#!/bin/sh
i=1
while [ $i -le 300 ]; do echo "line $i ok"; i=$((i+1)); done
echo "src/app.py:3:1: error: undefined name 'foo'" >&2
echo "token ghp_0123456789abcdefghijklmnopqrstuvwxyzAB"
printf '\\033[31mred\\033[0m \\033]0;title\\007done\\n'
i=1
while [ $i -le 100 ]; do echo "tail $i ok"; i=$((i+1)); done
echo "Found 1 error."
exit 3
"""


def project(tmp_path: Path, lint: str = "#!/bin/sh\necho lint ok\n", config: str = CONFIG) -> Path:
    return make_repo(tmp_path / "p", {".gitpilot.toml": config, "lint.sh": lint, "app.py": "x = 1\n",
                                      ".gitignore": "build/\n"})


def test_pass_lines_and_summary(tmp_path: Path) -> None:
    repo = project(tmp_path)
    res = run_pilot("check", cwd=repo)
    assert res.returncode == 0, res.stderr
    lines = res.stdout.splitlines()
    assert re.fullmatch(r"PASS echo unit-start; echo '3 passed in 0.1s' \(\d+\.\ds\) · 3 passed", lines[0])
    assert re.fullmatch(r"PASS sh lint.sh \(\d+\.\ds\)", lines[1])
    assert lines[-1] == "checks: 2 passed, 0 failed"
    assert len(lines) == 3  # quiet: the command's own output stays in the log


def test_fail_prints_log_path_excerpt_and_log_is_byte_exact(tmp_path: Path) -> None:
    repo = project(tmp_path, lint=LINT_FAIL)
    res = run_pilot("check", cwd=repo)
    assert res.returncode == 1
    out = res.stdout
    m = re.search(r"^FAIL sh lint.sh exit 3 \(\d+\.\ds\)\nlog: (\S+) \((.+)\)\nexcerpt: (\d+) of (\d+) lines$", out, re.M)
    assert m, out
    log = Path(m.group(1))
    assert log.parent.parent.name == "adhoc" and log.name == "02-lint.log"
    assert log.is_relative_to(repo / ".git" / "pilot" / "checks")
    # the log holds exactly what the command printed, stdout and stderr interleaved
    expected = __import__("subprocess").run(["sh", "lint.sh"], cwd=repo, capture_output=True).stdout
    data = log.read_bytes()
    assert b"error: undefined name 'foo'" in data and b"\x1b[31m" in data
    assert data.replace(b"src/app.py:3:1: error: undefined name 'foo'\n", b"") == expected
    assert "ghp_0123456789abcdefghijklmnopqrstuvwxyzAB" in data.decode()  # log untouched
    assert "ghp_0123456789" not in out  # excerpt redacted
    assert "\x1b" not in out
    assert "error: undefined name 'foo'" in out
    assert int(m.group(3)) <= 60 and int(m.group(4)) == 404
    assert out.splitlines()[-1] == "checks: 1 passed, 1 failed · full log: git pilot check --log lint"


def test_reuse_on_unchanged_tree_and_rerun_after_changes(tmp_path: Path) -> None:
    repo = project(tmp_path, config=CONFIG.replace("echo unit-start", "echo run >> ../runs.txt; echo unit-start"))
    runs = tmp_path / "runs.txt"
    assert run_pilot("check", cwd=repo).returncode == 0
    assert runs.read_text().count("run") == 1
    again = run_pilot("check", cwd=repo)
    assert again.returncode == 0
    assert runs.read_text().count("run") == 1
    assert re.search(r"^PASS .*\(reused: passed \d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ by ada@example.com\)$", again.stdout, re.M)
    assert again.stdout.splitlines()[-1] == "checks: 2 passed, 0 failed (2 reused)"
    # an ignored file does not change the checked state
    (repo / "build").mkdir()
    (repo / "build" / "out.bin").write_text("artifact")
    run_pilot("check", cwd=repo)
    assert runs.read_text().count("run") == 1
    # an untracked, not ignored file does
    (repo / "new.py").write_text("y = 2\n")
    run_pilot("check", cwd=repo)
    assert runs.read_text().count("run") == 2
    # a tracked file edit does
    (repo / "app.py").write_text("x = 2\n")
    run_pilot("check", cwd=repo)
    assert runs.read_text().count("run") == 3
    # --force reruns on an unchanged tree
    run_pilot("check", "--force", cwd=repo)
    assert runs.read_text().count("run") == 4


def test_notes_readable_by_stock_git_with_fanout(tmp_path: Path) -> None:
    repo = project(tmp_path)
    assert run_pilot("check", cwd=repo).returncode == 0
    tree = json.loads(run_pilot("check", "--json", cwd=repo).stdout)["tree"]
    body = git(repo, "notes", "--ref=pilot/checks", "show", tree)
    recs = [json.loads(line) for line in body.splitlines()]
    assert {r["check"] for r in recs} == {"unit", "lint"}
    for r in recs:
        assert r["result"] == "pass" and r["email"] == "ada@example.com"
        assert {"cmd", "key", "secs", "time", "host", "platform", "version"} <= r.keys()
    names = git(repo, "ls-tree", "--name-only", "refs/notes/pilot/checks").split()
    assert names == [tree[:2]]
    # the user's index is untouched by the tree-id computation
    assert git(repo, "status", "--porcelain") == ""


def test_worktree_tree_id_does_not_touch_the_index(tmp_path: Path) -> None:
    repo = project(tmp_path)
    (repo / "untracked.txt").write_text("u\n")
    (repo / "app.py").write_text("x = 3\n")
    before = (repo / ".git" / "index").read_bytes()
    run_pilot("check", cwd=repo)
    assert (repo / ".git" / "index").read_bytes() == before
    assert "?? untracked.txt" in git(repo, "status", "--porcelain")


def test_no_pass_recorded_when_check_modifies_tree(tmp_path: Path) -> None:
    cfg = '[[check]]\nname = "gen"\nrun = "date +%N > generated.txt"\n'
    repo = project(tmp_path, config=cfg)
    res = run_pilot("check", cwd=repo)
    assert res.returncode == 0
    assert "not recorded: the check changed the working tree (gen)" in res.stdout
    assert git(repo, "notes", "--ref=pilot/checks", "list", check=False) == ""


def test_only_bail_log_json(tmp_path: Path) -> None:
    cfg = CONFIG + '\n[[check]]\nname = "third"\nrun = "echo third > ../third.txt"\n'
    repo = project(tmp_path, lint=LINT_FAIL, config=cfg)
    res = run_pilot("check", "--only", "2", cwd=repo)
    assert res.returncode == 1 and "FAIL sh lint.sh" in res.stdout and "unit" not in res.stdout.split("\n")[0]
    assert "checks: 0 passed, 1 failed" in res.stdout
    res = run_pilot("check", "--bail", "--force", cwd=repo)
    assert res.returncode == 1
    assert not (tmp_path / "third.txt").exists()  # stopped after the failing check
    log = run_pilot("check", "--log", "lint", cwd=repo)
    assert log.returncode == 0 and log.stdout.count("line ") == 300 and "\x1b[31mred" in log.stdout
    js = json.loads(run_pilot("check", "--json", cwd=repo).stdout)
    by = {c["name"]: c for c in js["checks"]}
    assert by["unit"]["result"] == "pass" and by["unit"]["reused"] is True
    assert by["lint"]["result"] == "fail" and by["lint"]["exit"] == 3 and by["lint"]["log_lines"] == 404
    assert by["third"]["result"] == "pass" and js["failed"] == 1
    bad = run_pilot("check", "--only", "nope", cwd=repo)
    assert bad.returncode == 1 and "no check named 'nope'" in bad.stderr


def test_explain_says_why(tmp_path: Path) -> None:
    repo = project(tmp_path)
    first = run_pilot("check", "--explain", cwd=repo)
    assert "explain: unit: ran: no pass recorded for this tree and command" in first.stdout
    second = run_pilot("check", "--explain", cwd=repo)
    assert re.search(r"explain: unit: reused: pass recorded here at \S+ by ada@example.com", second.stdout)


def test_timeout_kills_the_process_group(tmp_path: Path) -> None:
    # The grandchild's command line names this test's own file, so another test run on the same
    # machine (its own `sleep 30; echo late`) is never taken for a survivor of this one.
    late = f"late-{os.getpid()}-{tmp_path.name}.txt"
    cfg = f'[[check]]\nname = "slow"\nrun = "sh -c \'sleep 30; echo late > ../{late}\' & sleep 30"\ntimeout_minutes = 0.02\n'
    repo = project(tmp_path, config=cfg)
    res = run_pilot("check", cwd=repo, timeout=25)
    assert res.returncode == 1
    assert f"FAIL sh -c 'sleep 30; echo late > ../{late}' & sleep 30 timed out after 0.02 min" in res.stdout
    import subprocess

    ps = subprocess.run(["pgrep", "-f", f"sleep 30; echo late > ../{late}"], capture_output=True, text=True)
    assert ps.stdout.strip() == ""


def test_env_values_are_part_of_the_key(tmp_path: Path) -> None:
    cfg = '[[check]]\nname = "e"\nrun = "echo run >> ../runs.txt"\nenv = ["MODE"]\n'
    repo = project(tmp_path, config=cfg)
    run_pilot("check", cwd=repo, env={"MODE": "a"})
    run_pilot("check", cwd=repo, env={"MODE": "a"})
    assert (tmp_path / "runs.txt").read_text().count("run") == 1
    run_pilot("check", cwd=repo, env={"MODE": "b"})
    assert (tmp_path / "runs.txt").read_text().count("run") == 2
    body = git(repo, "notes", "--ref=pilot/checks", "list")
    assert "MODE" not in body


def test_flaky_is_reported(tmp_path: Path) -> None:
    cfg = '[[check]]\nname = "coin"\nrun = "test -f ../pass-now"\n'
    repo = project(tmp_path, config=cfg)
    assert run_pilot("check", cwd=repo).returncode == 1
    (tmp_path / "pass-now").write_text("")
    res = run_pilot("check", cwd=repo)
    assert res.returncode == 0 and "flaky: coin both passed and failed on this tree" in res.stdout


def test_keep_runs(tmp_path: Path) -> None:
    cfg = '[leanloop.checks]\nkeep_runs = 2\n[[check]]\nname = "x"\nrun = "true"\n'
    repo = project(tmp_path, config=cfg)
    for _ in range(4):
        run_pilot("check", "--force", cwd=repo)
    assert len(list((repo / ".git" / "pilot" / "checks" / "adhoc").iterdir())) == 2


def test_linked_worktree_is_its_own_checkout(tmp_path: Path) -> None:
    repo = project(tmp_path)
    wt = tmp_path / "wt"
    git(repo, "worktree", "add", "-q", str(wt), "-b", "side")
    (wt / "app.py").write_text("x = 99\n")
    res = run_pilot("check", "--json", cwd=wt)
    main = run_pilot("check", "--json", cwd=repo)
    assert json.loads(res.stdout)["tree"] != json.loads(main.stdout)["tree"]
    # logs go to the common dir, shared by both
    assert (repo / ".git" / "pilot" / "checks" / "adhoc").is_dir()


def test_leanloop_disabled_restores_plain_output_without_reuse(tmp_path: Path) -> None:
    cfg = '[leanloop]\nenabled = false\n[[check]]\nname = "u"\nrun = "echo run >> ../runs.txt; echo full-output-line"\n'
    repo = project(tmp_path, config=cfg)
    first = run_pilot("check", cwd=repo)
    second = run_pilot("check", cwd=repo)
    assert first.returncode == second.returncode == 0
    assert (tmp_path / "runs.txt").read_text().count("run") == 2  # nothing reused
    assert second.stdout == "$ echo run >> ../runs.txt; echo full-output-line\nfull-output-line\nu: passed\n"
