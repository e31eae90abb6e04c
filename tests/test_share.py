"""git pilot share: passes travel between real clones through a bare remote; trust decides reuse."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from conftest import REPO_ROOT, git, make_repo, pilot_env, run_pilot

CHECK = "[[check]]\nname = \"unit\"\nrun = \"true\"\n"
# Trust is the clone's own (git config pilot.trust); the committed file can only narrow it.
TRUST_ORIGIN = CHECK + "[share]\ntrust = [\"origin\"]\n"


def bare_with(tmp: Path, config: str) -> Path:
    """A bare remote whose main holds ``config`` as .gitpilot.toml."""
    remote = tmp / "remote.git"
    git(tmp, "init", "-q", "--bare", str(remote))
    seed = make_repo(tmp / "seed", {".gitpilot.toml": config, "app.py": "x = 1\n"})
    git(seed, "push", "-q", str(remote), "main")
    return remote


def clone(remote: Path, path: Path, name: str = "origin", trust: bool = False) -> Path:
    """A clone of ``remote`` under ``name``; with ``trust``, one that trusts it (git config pilot.trust)."""
    git(remote.parent, "clone", "-q", "-o", name, str(remote), str(path))
    if trust:
        git(path, "config", "--add", "pilot.trust", name)
    return path


def pilot(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    res = run_pilot(*args, cwd=cwd)
    assert res.returncode == 0, f"git pilot {' '.join(args)}: {res.stdout}{res.stderr}"
    return res


def check_json(cwd: Path) -> dict[str, object]:
    data = json.loads(pilot(cwd, "check", "--json").stdout)
    item = data["checks"][0]
    assert isinstance(item, dict)
    return item


def note_lines(repo: Path, ref: str, tree: str) -> list[dict[str, object]]:
    body = git(repo, "notes", f"--ref={ref}", "show", tree)
    return [json.loads(ln) for ln in body.splitlines() if ln.strip()]


def tree_of(repo: Path) -> str:
    return git(repo, "rev-parse", "HEAD^{tree}").strip()


def test_setup_adds_only_a_fetch_refspec(tmp_path: Path) -> None:
    remote = bare_with(tmp_path, CHECK)
    a = clone(remote, tmp_path / "a")
    out = pilot(a, "share", "setup").stdout
    assert "added fetch refspec +refs/notes/pilot/*:refs/notes/remotes/origin/pilot/*" in out
    assert "already fetches" in pilot(a, "share", "setup", "origin").stdout
    fetch = git(a, "config", "--get-all", "remote.origin.fetch").splitlines()
    assert fetch == ["+refs/heads/*:refs/remotes/origin/*",
                     "+refs/notes/pilot/*:refs/notes/remotes/origin/pilot/*"]
    assert git(a, "config", "--get-all", "remote.origin.push", check=False) == ""
    # a plain fetch now brings the notes; a plain push still pushes branches, not notes
    pilot(a, "check")
    pilot(a, "share", "push")
    b = clone(remote, tmp_path / "b")
    pilot(b, "share", "setup")
    git(b, "fetch", "-q", "origin")
    assert git(b, "rev-parse", "refs/notes/remotes/origin/pilot/checks").strip()


def test_pass_from_clone_a_is_reused_in_b_only_when_its_remote_is_trusted(tmp_path: Path) -> None:
    remote = bare_with(tmp_path, TRUST_ORIGIN)
    a = clone(remote, tmp_path / "a")
    assert check_json(a)["reused"] is False
    push = pilot(a, "share", "push").stdout
    assert "pushed 1 check record(s) on 1 tree(s) to origin" in push
    # B calls the same remote "origin" and trusts it: the pass is reused
    b = clone(remote, tmp_path / "b", trust=True)
    assert "pulled check notes from origin: 1 record(s) on 1 tree(s)" in pilot(b, "share", "pull").stdout
    item = check_json(b)
    assert item["reused"] is True
    origin = item["reused_from"]
    assert isinstance(origin, dict)
    assert (origin["remote"], origin["email"]) == ("origin", "ada@example.com") and origin["platform"]
    # C reaches the same remote under a name it does not trust: shown, never reused
    c = clone(remote, tmp_path / "c", name="upstream")
    pilot(c, "share", "pull")
    explain = pilot(c, "check", "--explain").stdout
    assert "explain: unit: ran: the only passes came from untrusted remote(s): upstream" in explain
    assert "(reused" not in explain


def forged_pass(tree_config: str) -> str:
    """A pass record for the configured check, as an attacker who read the config would write it."""
    from gitpilot.checks.records import Record, command_hash, key_hash, this_platform
    from gitpilot.config import CheckSpec

    spec = CheckSpec(name="unit", run="true")
    rec = Record(check="unit", cmd=command_hash(spec), key=key_hash(spec, {}), result="pass", secs=0.1,
                 time="2020-01-01T00:00:00Z", email="ci@example.com", host="ci", platform=this_platform(),
                 version="0.5.0", exit=0, remote="origin")
    assert 'run = "true"' in tree_config
    return rec.to_line()


def test_forged_note_on_an_untrusted_remote_is_never_reused_nor_laundered(tmp_path: Path) -> None:
    remote = bare_with(tmp_path, TRUST_ORIGIN)
    fork = tmp_path / "fork.git"
    git(tmp_path, "clone", "-q", "--bare", str(remote), str(fork))
    # The attacker writes a pass that even claims to come from the trusted remote, and pushes
    # it to the fork with stock git.
    evil = clone(fork, tmp_path / "evil")
    tree = tree_of(evil)
    git(evil, "notes", "--ref=pilot/checks", "add", "-m", forged_pass(TRUST_ORIGIN), tree)
    git(evil, "push", "-q", "origin", "refs/notes/pilot/checks")
    # The victim trusts origin and also pulls from the fork.
    victim = clone(remote, tmp_path / "victim", trust=True)
    git(victim, "remote", "add", "fork", str(fork))
    pilot(victim, "share", "pull", "fork")
    stored = note_lines(victim, "pilot/checks", tree)
    assert [(r["remote"], r["email"]) for r in stored] == [("fork", "ci@example.com")]  # tagged by us
    explain = pilot(victim, "check", "--explain", "--only", "unit").stdout
    assert "explain: unit: ran: the only passes came from untrusted remote(s): fork" in explain
    # The victim pushes to the trusted remote: its own pass goes, never the fork's line.
    pilot(victim, "share", "push", "origin")
    pushed = note_lines(remote, "pilot/checks", tree)
    assert [(r.get("remote"), r["email"]) for r in pushed] == [(None, "ada@example.com")]
    # and a third clone that trusts origin reuses only that honest pass
    third = clone(remote, tmp_path / "third", trust=True)
    pilot(third, "share", "pull")
    item = check_json(third)
    assert item["reused"] is True and item["reused_from"]["email"] == "ada@example.com"  # type: ignore[index]


def test_malformed_remote_lines_are_skipped_with_one_warning(tmp_path: Path) -> None:
    remote = bare_with(tmp_path, TRUST_ORIGIN)
    a = clone(remote, tmp_path / "a")
    pilot(a, "check")
    tree = tree_of(a)
    good = git(a, "notes", "--ref=pilot/checks", "show", tree).strip()
    rec = json.loads(good)
    bad = [
        "not json at all",
        json.dumps({**rec, "v": 2}),  # a future record version
        json.dumps({**rec, "host": "evil\x1b]0;pwned\x07"}),  # terminal escapes
        json.dumps({**rec, "email": "x" * 5000}),  # oversized
        json.dumps({**rec, "key": "../../etc"}),
        json.dumps({**rec, "host": "ghp_0123456789abcdefghijklmnopqrstuvwxyzAB"}),  # a credential
        "[1, 2, 3]",
    ]
    body = "\n".join([good, *bad]) + "\n"
    git(a, "notes", "--ref=pilot/checks", "add", "-f", "-m", body, tree)
    git(a, "push", "-q", "origin", "refs/notes/pilot/checks")
    b = clone(remote, tmp_path / "b", trust=True)
    res = run_pilot("share", "pull", cwd=b)
    assert res.returncode == 0
    warnings = [ln for ln in res.stderr.splitlines() if ln]
    assert warnings == [f"warning: skipped {len(bad)} malformed or unknown check record line(s) from origin"]
    stored = git(b, "notes", "--ref=pilot/checks", "show", tree).splitlines()
    assert stored == [json.dumps({**rec, "remote": "origin"}, sort_keys=True, separators=(",", ":"))]
    assert check_json(b)["reused"] is True
    again = run_pilot("share", "pull", cwd=b)
    assert again.stderr == "" and "nothing new" in again.stdout  # one warning, not one per pull


PUSHER = """
import sys
from gitpilot.repo import Repo
from gitpilot.share import sync
repo = Repo.discover(sys.argv[1])
result = sync.push(repo, "origin")
print(result.lines, result.attempts)
"""


def test_concurrent_pushes_from_two_clones_both_land(tmp_path: Path) -> None:
    remote = bare_with(tmp_path, TRUST_ORIGIN)
    clones = []
    for name in ("a", "b", "c"):
        repo = clone(remote, tmp_path / name)
        (repo / f"{name}.txt").write_text(name)
        git(repo, "add", ".")
        git(repo, "commit", "-q", "-m", name)
        pilot(repo, "check")
        clones.append(repo)
    procs = [subprocess.Popen([sys.executable, "-c", PUSHER, str(r)], env=pilot_env(), cwd=REPO_ROOT,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE) for r in clones]
    results = [p.communicate(timeout=120) for p in procs]
    assert all(p.returncode == 0 for p in procs), results
    assert sorted(out.split()[0] for out, _ in results) == [b"1", b"1", b"1"]
    for repo in clones:
        lines = note_lines(remote, "pilot/checks", tree_of(repo))
        assert len(lines) == 1 and lines[0]["result"] == "pass"
    # every notes commit on the remote descends from the previous one: nothing was forced
    log = git(remote, "log", "--format=%P", "refs/notes/pilot/checks").split("\n")
    assert len([p for p in log if p]) == 2  # three pushes: a root and two children


def test_push_sends_only_local_records_on_top_of_the_remote_notes(tmp_path: Path) -> None:
    remote = bare_with(tmp_path, TRUST_ORIGIN)
    a = clone(remote, tmp_path / "a")
    pilot(a, "check")
    pilot(a, "share", "push")
    before = git(remote, "rev-parse", "refs/notes/pilot/checks").strip()
    b = clone(remote, tmp_path / "b")
    (b / "b.txt").write_text("b")
    pilot(b, "check")
    out = pilot(b, "share", "push").stdout
    assert "pulled check notes from origin: 1 record(s) on 1 tree(s)" in out
    assert "pushed 1 check record(s) on 1 tree(s) to origin" in out
    after = git(remote, "rev-parse", "refs/notes/pilot/checks").strip()
    assert git(remote, "rev-parse", f"{after}^").strip() == before  # a fast-forward of the remote's notes
    assert note_lines(remote, "pilot/checks", tree_of(a)) == note_lines(a, "pilot/checks", tree_of(a))
    assert "origin already has every check record made here" in pilot(b, "share", "push").stdout
    assert git(remote, "rev-parse", "refs/notes/pilot/checks").strip() == after


def test_pull_without_notes_on_the_remote_and_unknown_remote(tmp_path: Path) -> None:
    remote = bare_with(tmp_path, CHECK)
    a = clone(remote, tmp_path / "a")
    assert pilot(a, "share", "pull").stdout.strip() == "origin has no check notes yet"
    res = run_pilot("share", "pull", "nowhere", cwd=a)
    assert res.returncode == 1
    assert res.stderr.strip() == "git pilot: no remote named 'nowhere' (remotes: origin)"
    git(a, "remote", "add", "broken", str(tmp_path / "missing.git"))
    res = run_pilot("share", "push", "broken", cwd=a)
    assert res.returncode == 1 and res.stderr.startswith("git pilot: cannot fetch notes from broken:")


def test_merge_equals_git_cat_sort_uniq(tmp_path: Path) -> None:
    remote = bare_with(tmp_path, TRUST_ORIGIN)
    a = clone(remote, tmp_path / "a")
    pilot(a, "check")
    pilot(a, "share", "push")
    b = clone(remote, tmp_path / "b")
    (b / "app.py").write_text("x = 2\n")
    pilot(b, "check")
    pilot(b, "check", "--force")
    git(b, "fetch", "-q", "origin", "+refs/notes/pilot/checks:refs/notes/theirs")
    git(b, "update-ref", "refs/notes/gitmerge", "refs/notes/pilot/checks")
    git(b, "notes", "--ref=refs/notes/gitmerge", "merge", "-q", "-s", "cat_sort_uniq", "refs/notes/theirs")
    pilot(b, "share", "pull")
    for tree in (tree_of(a), git(b, "write-tree").strip()):
        ours = git(b, "notes", "--ref=pilot/checks", "show", tree).splitlines()
        theirs = git(b, "notes", "--ref=refs/notes/gitmerge", "show", tree).splitlines()
        # the same lines, except that ours say which remote the pulled ones came from
        def untag(lines: list[str]) -> list[str]:
            return sorted(json.dumps({k: v for k, v in json.loads(x).items() if k != "remote"},
                                     sort_keys=True, separators=(",", ":")) for x in lines)
        assert untag(ours) == untag(theirs) and ours == sorted(ours)
