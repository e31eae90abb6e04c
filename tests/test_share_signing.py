"""Signed check passes: CI signs, a teammate who trusts ``signed`` reuses; nothing forged counts.

Real keys made by ssh-keygen in tmp_path, real clones, a real bare remote. ``gpg.ssh.program``
points at a wrapper around the real ssh-keygen that logs each call, so the tests can say
when a cache hit starts none.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
from conftest import git, make_repo, run_pilot

pytestmark = pytest.mark.skipif(shutil.which("ssh-keygen") is None, reason="ssh-keygen is not installed")

# RUNS says whether the check really ran; FAIL makes it fail (neither is declared: same key).
CHECK = ("[[check]]\nname = \"unit\"\n"
         "run = \"echo ran >> \\\"$RUNS\\\"; test -z \\\"$FAIL\\\"\"\n")


class World:
    def __init__(self, tmp: Path) -> None:
        self.tmp = tmp
        self.remote = tmp / "remote.git"
        git(tmp, "init", "-q", "--bare", str(self.remote))
        seed = make_repo(tmp / "seed", {".gitpilot.toml": CHECK, "app.py": "x = 1\n"})
        git(seed, "push", "-q", str(self.remote), "main")
        self.ci_key = self.keygen("ci")
        self.rogue_key = self.keygen("rogue")
        self.signers = tmp / "trust" / "allowed_signers"  # outside every work tree
        self.signers.parent.mkdir()
        self.signers.write_text(f'ci@example.com namespaces="git-pilot" {self.ci_key.with_suffix(".pub").read_text()}')
        self.calls = tmp / "ssh-keygen.calls"
        self.program = tmp / "bin" / "logged-ssh-keygen"
        self.program.parent.mkdir(exist_ok=True)
        self.program.write_text(f"#!/bin/sh\necho \"$2\" >> '{self.calls}'\nexec ssh-keygen \"$@\"\n")
        self.program.chmod(0o755)

    def keygen(self, name: str) -> Path:
        key = self.tmp / "keys" / name
        key.parent.mkdir(exist_ok=True)
        subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", name, "-f", str(key)], check=True)
        return key

    def clone(self, name: str) -> Path:
        path = self.tmp / name
        git(self.tmp, "clone", "-q", str(self.remote), str(path))
        return path

    def signer(self, name: str, key: Path) -> Path:
        repo = self.clone(name)
        for k, v in (("gpg.format", "ssh"), ("user.signingkey", str(key)), ("pilot.sign", "true"),
                     ("user.email", f"{name}@example.com"), ("gpg.ssh.program", str(self.program))):
            git(repo, "config", k, v)
        return repo

    def teammate(self, name: str = "mate") -> Path:
        repo = self.clone(name)
        git(repo, "config", "pilot.trust", "signed")
        git(repo, "config", "gpg.ssh.allowedSignersFile", str(self.signers))
        git(repo, "config", "gpg.ssh.program", str(self.program))
        return repo

    def check(self, repo: Path, *args: str, fail: bool = False) -> subprocess.CompletedProcess[str]:
        env = {"RUNS": str(repo.parent / f"{repo.name}.runs"), "FAIL": "1" if fail else ""}
        return run_pilot("check", *args, cwd=repo, env=env)

    def ran(self, repo: Path) -> int:
        runs = repo.parent / f"{repo.name}.runs"
        return runs.read_text().count("ran") if runs.exists() else 0

    def keygen_calls(self) -> list[str]:
        return self.calls.read_text().split() if self.calls.exists() else []


def pilot(repo: Path, *args: str) -> str:
    res = run_pilot(*args, cwd=repo)
    assert res.returncode == 0, res.stdout + res.stderr
    return res.stdout


def note(repo: Path, tree: str) -> list[str]:
    return [ln for ln in git(repo, "notes", "--ref=pilot/checks", "show", tree).splitlines() if ln]


def tree_of(repo: Path) -> str:
    return git(repo, "rev-parse", "HEAD^{tree}").strip()


def explain_line(res: subprocess.CompletedProcess[str]) -> str:
    lines = [ln for ln in res.stdout.splitlines() if ln.startswith("explain: unit: ")]
    assert len(lines) == 1, res.stdout + res.stderr
    return lines[0][len("explain: unit: "):]


def test_ci_signed_pass_is_reused_by_a_teammate_and_a_cache_hit_starts_no_ssh_keygen(tmp_path: Path) -> None:
    w = World(tmp_path)
    ci = w.signer("ci", w.ci_key)
    assert w.check(ci).returncode == 0
    assert w.keygen_calls() == ["sign"]  # one ssh-keygen for all the records of the run
    [line] = note(ci, tree_of(ci))  # stock git reads the signed note
    rec = json.loads(line)
    assert rec["tree"] == tree_of(ci) and rec["result"] == "pass" and len(rec["sig"]) > 100
    pilot(ci, "share", "push")
    mate = w.teammate()
    pulled = pilot(mate, "share", "pull")
    assert "1 record(s)" in pulled
    res = w.check(mate, "--explain")
    assert res.returncode == 0
    assert explain_line(res).startswith("reused: pass recorded via remote origin")
    assert "(signature verified)" in explain_line(res)
    assert w.ran(mate) == 0
    verified = w.keygen_calls()
    assert verified[0] == "sign" and "verify" in verified[1:]
    # The answer is kept: the next check starts no ssh-keygen at all.
    again = w.check(mate)
    assert again.returncode == 0 and "(reused: passed" in again.stdout
    assert w.keygen_calls() == verified and w.ran(mate) == 0


def test_revocation_stops_reuse_at_the_next_check(tmp_path: Path) -> None:
    w = World(tmp_path)
    ci = w.signer("ci", w.ci_key)
    assert w.check(ci).returncode == 0
    pilot(ci, "share", "push")
    mate = w.teammate()
    pilot(mate, "share", "pull")
    assert "(reused: passed" in w.check(mate).stdout
    w.signers.write_text("")  # CI's key removed from the allowed signers
    res = w.check(mate, "--explain")
    assert w.ran(mate) == 1
    assert explain_line(res).startswith(f"ran: no pass counts here: from origin: signed by a key not allowed in "
                                        f"{os.path.realpath(w.signers)}")


def test_forged_passes_do_not_count_and_explain_says_why(tmp_path: Path) -> None:
    w = World(tmp_path)
    ci = w.signer("ci", w.ci_key)
    rogue = w.signer("rogue", w.rogue_key)  # a key nobody listed
    plain = w.clone("plain")  # records unsigned
    mate = w.teammate()
    # A tree CI really passed, then four trees with one forgery each, all pushed to the remote
    # the teammate pulls from.
    trees: dict[str, str] = {}
    for name in ("source", "unlisted", "copied", "edited", "unsigned"):
        (mate / "app.py").write_text(f"x = {name!r}\n")
        git(mate, "commit", "-q", "-am", name)
        git(mate, "push", "-q", "origin", "main")
        trees[name] = tree_of(mate)
    for repo in (ci, rogue, plain):
        git(repo, "pull", "-q", "origin", "main")
    git(rogue, "checkout", "-q", "HEAD~3")  # the "unlisted" tree
    assert w.check(rogue).returncode == 0
    pilot(rogue, "share", "push")
    # A valid CI signature copied onto another tree (by stock git).
    git(ci, "checkout", "-q", "HEAD~4")
    assert w.check(ci).returncode == 0
    [ci_line] = note(ci, trees["source"])
    git(ci, "notes", "--ref=pilot/checks", "add", "-f", "-m", ci_line, trees["copied"])
    # A CI failure whose result was edited to a pass.
    git(ci, "checkout", "-q", "main")
    git(ci, "checkout", "-q", "HEAD~1")
    assert w.check(ci, fail=True).returncode == 1
    [fail_line] = note(ci, trees["edited"])
    edited = fail_line.replace('"result":"fail"', '"result":"pass"').replace('"exit":1', '"exit":0')
    assert edited != fail_line
    git(ci, "notes", "--ref=pilot/checks", "add", "-f", "-m", edited, trees["edited"])
    pilot(ci, "share", "push")
    # An unsigned pass.
    git(plain, "checkout", "-q", "main")
    assert w.check(plain).returncode == 0
    pilot(plain, "share", "push")

    pulled = pilot(mate, "share", "pull").splitlines()
    assert pulled[0] == ("pulled check notes from origin: 5 record(s) on 5 tree(s), recorded by "
                         "ci@example.com (3), ada@example.com (1), rogue@example.com (1)")
    assert pulled[1].startswith("1 of them count here; the others do not: ")  # CI's real pass on "source"
    for reason in ("unsigned (1)", "its signature does not match the record (edited after signing) (1)",
                   f"its signature is for another tree ({trees['source'][:12]}) (1)", "No principal matched.) (1)"):
        assert reason in pulled[1], pulled[1]
    why = {}
    for name, steps_back in (("unlisted", 3), ("copied", 2), ("edited", 1), ("unsigned", 0)):
        git(mate, "checkout", "-q", f"main~{steps_back}" if steps_back else "main")
        assert tree_of(mate) == trees[name]
        res = w.check(mate, "--explain")
        assert res.returncode == 0 and "(reused" not in res.stdout, res.stdout
        why[name] = explain_line(res)
    assert w.ran(mate) == 4
    assert why["unlisted"].startswith("ran: no pass counts here: from origin: signed by a key not allowed in")
    assert why["copied"] == (f"ran: no pass counts here: from origin: its signature is for another tree "
                             f"({trees['source'][:12]})")
    assert why["edited"] == "ran: no pass counts here: from origin: its signature does not match the record " \
                            "(edited after signing)"
    assert why["unsigned"] == "ran: no pass counts here: from origin: unsigned"


def test_union_merge_of_signed_and_unsigned_lines_from_two_clones_loses_nothing(tmp_path: Path) -> None:
    w = World(tmp_path)
    ci = w.signer("ci", w.ci_key)
    plain = w.clone("plain")
    assert w.check(ci).returncode == 0
    assert w.check(plain).returncode == 0
    tree = tree_of(ci)
    signed, unsigned = note(ci, tree), note(plain, tree)
    assert "sig" in json.loads(signed[0]) and "sig" not in json.loads(unsigned[0])
    # git's own cat_sort_uniq merge of what the two clones recorded ...
    mate = w.teammate()
    git(mate, "fetch", "-q", str(ci), "+refs/notes/pilot/checks:refs/notes/ci")
    git(mate, "fetch", "-q", str(plain), "+refs/notes/pilot/checks:refs/notes/plain")
    git(mate, "notes", "--ref=refs/notes/ci", "merge", "-q", "-s", "cat_sort_uniq", "refs/notes/plain")
    by_git = git(mate, "notes", "--ref=refs/notes/ci", "show", tree).splitlines()
    assert sorted(by_git) == sorted(signed + unsigned)
    # ... is what the remote holds once both have pushed (the second pulls the first's line first).
    pilot(ci, "share", "push")
    pilot(plain, "share", "push")
    assert note(w.remote, tree) == by_git
    pilot(mate, "share", "pull")
    res = w.check(mate, "--explain")
    assert "(signature verified)" in explain_line(res) and w.ran(mate) == 0


def test_signing_that_cannot_work_records_nothing_and_exits_1(tmp_path: Path) -> None:
    w = World(tmp_path)
    ci = w.signer("ci", tmp_path / "keys" / "missing")
    res = w.check(ci)
    assert res.returncode == 1
    assert "PASS " in res.stdout  # the result is still shown
    assert res.stderr.strip().splitlines()[-1] == (
        f"git pilot: check results not recorded: user.signingkey {tmp_path / 'keys' / 'missing'} "
        "is not a readable key file")
    assert git(ci, "notes", "--ref=pilot/checks", "list", check=False) == ""


def test_doctor_reports_signing_and_trust(tmp_path: Path) -> None:
    w = World(tmp_path)
    ci = w.signer("ci", w.ci_key)
    assert w.check(ci).returncode == 0
    pilot(ci, "share", "push")
    out = run_pilot("doctor", cwd=ci).stdout
    assert f"ok     records made here are signed with {w.ci_key} (namespace git-pilot)" in out
    mate = w.teammate()
    pilot(mate, "share", "pull")
    out = run_pilot("doctor", cwd=mate).stdout
    assert "counts here: records made here; records signed by a key in gpg.ssh.allowedSignersFile" in out
    assert f"allowed signers: {os.path.realpath(w.signers)}; 1 of 1 signed record(s) on the current tree verify" in out
    # problems are named, with exit 1
    git(ci, "config", "user.signingkey", str(tmp_path / "nokey"))
    res = run_pilot("doctor", cwd=ci)
    assert res.returncode == 1
    assert f"FIX    pilot.sign is true but records cannot be signed: user.signingkey {tmp_path / 'nokey'} " \
           "is not a readable key file" in res.stdout
    inside = mate / "allowed_signers"  # ignored, so the checked tree is the same; git would still
    inside.write_text(w.signers.read_text())  # overwrite it with a branch's tracked file of that name
    (mate / ".git" / "info" / "exclude").write_text("allowed_signers\n")
    git(mate, "config", "gpg.ssh.allowedSignersFile", "allowed_signers")
    res = run_pilot("doctor", cwd=mate)
    assert res.returncode == 1
    assert f"FIX    pilot.trust signed: gpg.ssh.allowedSignersFile {inside} is inside the work tree" in res.stdout
    explain = w.check(mate, "--explain")
    assert "is inside the work tree, where a branch can change it" in explain_line(explain)
