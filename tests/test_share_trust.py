"""Trust is the clone's own (git config pilot.trust); the committed file may only narrow it.

Real clones of a real bare remote. Also: only records that count here make a check flaky.
"""

from __future__ import annotations

from pathlib import Path

from conftest import git, make_repo, run_pilot

# The check passes or fails by an environment variable it does not declare: the same key, so
# one clone's pass and another's failure meet on one tree.
CHECK = "[[check]]\nname = \"unit\"\nrun = \"test -z \\\"$FAIL\\\"\"\n"


def world(tmp: Path, config: str) -> tuple[Path, Path]:
    """A bare remote holding ``config`` and a clone that checked main and pushed its pass."""
    remote = tmp / "remote.git"
    git(tmp, "init", "-q", "--bare", str(remote))
    seed = make_repo(tmp / "seed", {".gitpilot.toml": config, "app.py": "x = 1\n"})
    git(seed, "push", "-q", str(remote), "main")
    a = tmp / "a"
    git(tmp, "clone", "-q", str(remote), str(a))
    assert run_pilot("check", cwd=a).returncode == 0
    assert run_pilot("share", "push", cwd=a).returncode == 0
    return remote, a


def explain(repo: Path, env: dict[str, str] | None = None) -> str:
    res = run_pilot("check", "--explain", cwd=repo, env=env)
    return res.stdout


def test_a_committed_trust_cannot_widen_and_the_clone_trust_does_not_change_the_tree(tmp_path: Path) -> None:
    # The branch says "trust origin"; this clone said nothing: origin's pass does not count.
    remote, _ = world(tmp_path, CHECK + "[share]\ntrust = [\"origin\"]\n")
    b = tmp_path / "b"
    git(tmp_path, "clone", "-q", str(remote), str(b))
    assert run_pilot("share", "pull", cwd=b).returncode == 0
    tree_before = run_pilot("check", "--tree", cwd=b).stdout
    out = explain(b, {"FAIL": ""})
    assert "explain: unit: ran: the only passes came from untrusted remote(s): origin" in out
    # Trusting origin is this clone's own setting: the checked tree is the same, the pass counts.
    c = tmp_path / "c"
    git(tmp_path, "clone", "-q", str(remote), str(c))
    git(c, "config", "--add", "pilot.trust", "origin")
    assert run_pilot("share", "pull", cwd=c).returncode == 0
    assert run_pilot("check", "--tree", cwd=c).stdout == tree_before
    assert "explain: unit: reused: pass recorded via remote origin" in explain(c)
    assert git(c, "status", "--porcelain") == ""


def test_the_committed_file_narrows_the_clone_trust(tmp_path: Path) -> None:
    remote, _ = world(tmp_path, CHECK + "[share]\ntrust = [\"upstream\"]\n")
    b = tmp_path / "b"
    git(tmp_path, "clone", "-q", str(remote), str(b))
    git(b, "config", "--add", "pilot.trust", "origin")
    git(b, "config", "--add", "pilot.trust", "upstream")
    assert run_pilot("share", "pull", cwd=b).returncode == 0
    out = explain(b)
    assert ("explain: unit: ran: no pass counts here: from origin: this clone trusts origin, "
            "but .gitpilot.toml [share] trust leaves it out") in out
    assert "(reused" not in out


def test_an_untrusted_pass_beside_a_local_failure_is_not_flaky(tmp_path: Path) -> None:
    remote, _ = world(tmp_path, CHECK)
    b = tmp_path / "b"
    git(tmp_path, "clone", "-q", str(remote), str(b))
    assert run_pilot("share", "pull", cwd=b).returncode == 0
    res = run_pilot("check", cwd=b, env={"FAIL": "1"})
    assert res.returncode == 1 and "FAIL " in res.stdout
    assert "flaky" not in res.stdout
    res = run_pilot("check", cwd=b, env={"FAIL": "1"})
    assert res.returncode == 1 and "flaky" not in res.stdout
    # Once origin is trusted, its pass and the local failure both count: that is flaky.
    git(b, "config", "pilot.trust", "origin")
    res = run_pilot("check", cwd=b, env={"FAIL": "1"})
    assert res.returncode == 0 and "(reused: passed" in res.stdout
    assert "flaky: unit both passed and failed on this tree" in res.stdout


def test_doctor_flags_a_refspec_that_writes_into_our_notes(tmp_path: Path) -> None:
    remote, a = world(tmp_path, CHECK)
    git(a, "config", "pilot.trust", "origin")
    ok = run_pilot("doctor", cwd=a)
    assert "counts here: records made here; records from origin" in ok.stdout
    assert "writes into refs/notes/pilot/*" not in ok.stdout
    assert run_pilot("share", "setup", cwd=a).returncode == 0  # our own refspec is safe
    assert "writes into" not in run_pilot("doctor", cwd=a).stdout
    git(a, "remote", "add", "fork", str(remote))
    git(a, "config", "--add", "remote.fork.fetch", "+refs/notes/*:refs/notes/*")
    res = run_pilot("doctor", cwd=a)
    assert res.returncode == 1
    [line] = [ln for ln in res.stdout.splitlines() if "writes into" in ln]
    assert line.startswith("FIX    remote.fork.fetch +refs/notes/*:refs/notes/* writes into refs/notes/pilot/*: "
                           "records fetched that way count as made here")
    # the fix it prints works
    fix = line.split(" — ", 1)[1].split(" (git pilot share setup")[0]
    import subprocess

    subprocess.run(fix, shell=True, cwd=a, check=True)
    assert git(a, "config", "--get-all", "remote.fork.fetch") == "+refs/heads/*:refs/remotes/fork/*\n"
    assert "writes into" not in run_pilot("doctor", cwd=a).stdout


def test_pull_says_how_many_records_came_from_whom_and_whether_they_count(tmp_path: Path) -> None:
    remote, _ = world(tmp_path, CHECK)
    b = tmp_path / "b"
    git(tmp_path, "clone", "-q", str(remote), str(b))
    out = run_pilot("share", "pull", cwd=b).stdout.splitlines()
    assert out == ["pulled check notes from origin: 1 record(s) on 1 tree(s), recorded by ada@example.com",
                   "they do not count here: this clone does not trust origin (git config --add pilot.trust "
                   "origin, or pilot.trust signed for signed records)"]
    c = tmp_path / "c"
    git(tmp_path, "clone", "-q", str(remote), str(c))
    git(c, "config", "pilot.trust", "origin")
    out = run_pilot("share", "pull", cwd=c).stdout.splitlines()
    assert out[1] == "they count here: git pilot check reuses them on the same tree"
    data = __import__("json").loads(run_pilot("share", "pull", "--json", cwd=c).stdout)
    assert data["merged_lines"] == 0 and data["dropped"] == {"big_notes": 0, "notes": 0, "lines": 0}
