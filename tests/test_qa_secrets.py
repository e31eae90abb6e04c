"""Secrets stay out: files named like credentials are never opened, and text in a known credential
format never reaches a capsule, a cache, a note, a task record or an excerpt.

"Never opened" is tested for real: each credential-named file is a symlink to a FIFO with no
writer, so any ``open()`` of it hangs and the command times out.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from conftest import git, make_repo, run_pilot
from test_qa_support import standard_files

GH = "ghp_" + "Q" * 36
AWS = "AKIA" + "QQQQQQQQQQQQQQQQ"
ANT = "sk-ant-api03-" + "q" * 40
KEY_BLOCK = ("-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW\n"
             "-----END OPENSSH PRIVATE KEY-----\n")
SECRETS = (GH, AWS, ANT, "b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQ", "hunter2")
CREDENTIAL_NAMES = (".env", ".env.md", "id_rsa", "id_rsa.md", "id_ed25519.py", "secrets.json", "credentials.yaml",
                    "deploy.pem", ".npmrc")


def _hangs_if_opened(repo: Path) -> None:
    os.mkfifo(repo / "fifo")  # git ignores FIFOs: it is never tracked, never hashed
    for name in CREDENTIAL_NAMES:
        (repo / name).symlink_to("fifo")


def test_credential_named_files_are_never_opened(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", standard_files())
    _hangs_if_opened(repo)
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "credential-named files")
    names = ", ".join(f'"{n}"' for n in CREDENTIAL_NAMES)
    for config in (
        # Asked for by name, in every role the config has.
        f'[leanloop.context]\ninstruction_files = [{names}]\nrule_files = [{names}]\nalways_include = [{names}]\n'
        'files = ["*"]\n[[check]]\nname = "unit"\nrun = "true"\n',
        # The v0.4 plain prompt lists rule and context files for the agent.
        f'[leanloop]\nenabled = false\n[leanloop.context]\ninstruction_files = [{names}]\nfiles = ["*"]\n',
    ):
        (repo / ".gitpilot.toml").write_text(config)
        for args in (("capsule", "--task", "set up the widgets with the .env and id_rsa", "--print"),
                     ("run", "--dry-run", "set up the widgets"), ("sourcemap",), ("review-budget", "--base", "HEAD~1"),
                     ("check", "--force"), ("optimize", "propose"), ("doctor",), ("status",)):
            try:
                res = run_pilot(*args, cwd=repo, timeout=20)
            except subprocess.TimeoutExpired:
                pytest.fail(f"git pilot {' '.join(args)} opened a credential-named file (it blocked on the FIFO)")
            assert res.returncode in (0, 1) and "Traceback" not in res.stderr, (args, res.stderr)
            if args[0] == "run":
                for name in CREDENTIAL_NAMES:
                    assert f"{name}," not in res.stdout and f"{name})" not in res.stdout and f"{name}." not in res.stdout


@pytest.fixture
def leaky(tmp_path: Path) -> Path:
    """Secrets in every place a careless repository has them."""
    repo = make_repo(tmp_path / "repo", {
        **standard_files(),
        "CLAUDE.md": f"# Rules\n\nAlways run the tests.\n\n## Deploy\nUse {GH} to deploy the widgets.\n",
        "CONTRIBUTING.md": f"# Contributing\n\n## Never\nNever commit a key such as {ANT}.\n",
        "docs/ops.md": f"# Ops\n\n## Set up the widgets\nexport AWS_KEY={AWS}\n{KEY_BLOCK}",
        "settings.py": f'API_TOKEN = "{GH}"\n\ndef widgets():\n    return "{AWS}"\n',
        ".env": f"TOKEN={GH}\n",
        "id_rsa": KEY_BLOCK,
        # The command holds no secret (that case is its own test); its output does.
        ".gitpilot.toml": '[[check]]\nname = "unit"\nrun = "true"\n[[check]]\nname = "leaky"\n'
                          'run = "printf \'%s\\\\n\' \\"token=$LEAK\\" \\"aws $LEAK_AWS\\" \\"password=$LEAK_PW\\"; exit 1"\n'
                          'env = ["LEAK"]\n',
    })
    git(repo, "checkout", "-q", "-b", "feature")
    (repo / "settings.py").write_text(f'API_TOKEN = "{GH}"\nOTHER = "{ANT}"\n')
    git(repo, "commit", "-qam", "another token")
    return repo


def _everything_git_pilot_wrote(repo: Path) -> dict[str, bytes]:
    """Every note body, task-record file and machine-local file, except full check logs."""
    found: dict[str, bytes] = {}
    refs = git(repo, "for-each-ref", "--format=%(refname)", "refs/notes/", "refs/pilot/").split()
    for ref in refs:
        for line in git(repo, "ls-tree", "-r", ref).splitlines():
            meta, path = line.split("\t", 1)
            found[f"{ref}:{path}"] = subprocess.run(["git", "cat-file", "blob", meta.split()[2]], cwd=repo,
                                                    capture_output=True, check=True).stdout
        found[f"{ref} (log)"] = git(repo, "log", "--format=%B", ref).encode()
    for p in (repo / ".git" / "pilot").rglob("*"):
        rel = p.relative_to(repo / ".git" / "pilot").as_posix()
        if p.is_file() and not (rel.startswith("checks/") and rel.endswith(".log")):
            found[f".git/pilot/{rel}"] = p.read_bytes()
    return found


def test_secrets_in_docs_code_checks_and_state_never_reach_what_git_pilot_writes(leaky: Path) -> None:
    env = {"LEAK": GH, "LEAK_AWS": AWS, "LEAK_PW": "hunter2", "GIT_PILOT_HOOKS_SYNC": "1"}
    outputs = []
    for args in (("capsule", "--task", "deploy and set up the widgets with the API token", "--print"),
                 ("capsule", "--task", "deploy and set up the widgets with the API token", "--json"),
                 ("run", "--dry-run", "deploy and set up the widgets"),
                 ("check",), ("check", "--json"), ("check", "--explain"),
                 ("review-budget",), ("review-budget", "--json"), ("sourcemap",), ("sourcemap", "--json"),
                 ("efficiency",), ("efficiency", "--json"), ("hook", "post-commit"), ("hook", "post-checkout")):
        res = run_pilot(*args, cwd=leaky, env=env)
        assert "Traceback" not in res.stderr, (args, res.stderr)
        outputs.append((" ".join(args), res.stdout + res.stderr))
    tid = git(leaky, "for-each-ref", "--format=%(refname:lstrip=3)", "refs/pilot/tasks/").split()[0]
    blocked = run_pilot("state", "--task", tid[:8], "--blocker", f"the CI token {GH} expired; password=hunter2",
                        cwd=leaky)
    assert blocked.returncode == 0, blocked.stderr
    outputs.append(("state", blocked.stdout))
    outputs.append(("status", run_pilot("status", cwd=leaky).stdout))
    for name, text in outputs:
        for secret in SECRETS:
            assert secret not in text, f"{secret[:12]}... reached the output of git pilot {name}"
    for where, body in _everything_git_pilot_wrote(leaky).items():
        for secret in SECRETS:
            assert secret.encode() not in body, f"{secret[:12]}... reached {where}"
    # The excerpt still says what failed, with the values replaced.
    check = dict(outputs)["check"]
    assert "token=[REDACTED:github-token]" in check and "password=[REDACTED:password]" in check


def test_a_credential_in_a_check_command_never_reaches_the_capsule(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", {**standard_files(), ".gitpilot.toml":
                                         f'[[check]]\nname = "api"\nrun = "curl -H \'Authorization: token {GH}\' x"\n'})
    res = run_pilot("capsule", "--task", "set up the widgets", "--print", cwd=repo)
    assert res.returncode == 0 and "`api`" in res.stdout
    assert GH not in res.stdout


def test_a_credential_in_the_task_text_never_reaches_the_capsule_or_the_record(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", standard_files())
    res = run_pilot("capsule", "--task", f"set up the widgets; the token is {GH}", "--print", cwd=repo)
    assert res.returncode == 0
    assert GH not in res.stdout
    for where, body in _everything_git_pilot_wrote(repo).items():
        assert GH.encode() not in body, where


def test_the_source_map_never_holds_a_credential_shaped_name(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", {**standard_files(), "keys.js": f"export function {GH}() {{}}\n"})
    res = run_pilot("sourcemap", cwd=repo)
    assert res.returncode == 0 and "keys.js" in res.stdout
    assert GH not in res.stdout
    for where, body in _everything_git_pilot_wrote(repo).items():
        assert GH.encode() not in body, where


def test_a_credential_in_a_check_command_is_redacted_in_check_output(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", {**standard_files(), ".gitpilot.toml":
                                         f'[[check]]\nname = "api"\nrun = "echo {GH} >/dev/null; test -n \'{AWS}\'"\n'
                                         '[[check]]\nname = "bad"\nrun = "echo password=hunter2 >/dev/null; false"\n'})
    for args in (("check",), ("check",), ("check", "--json"), ("check", "--explain")):
        res = run_pilot(*args, cwd=repo)
        assert res.returncode == 1
        for secret in (GH, AWS, "hunter2"):
            assert secret not in res.stdout + res.stderr, (args, secret)
    plain = run_pilot("check", cwd=repo)
    assert "PASS echo [REDACTED:github-token] >/dev/null; test -n '[REDACTED:aws-access-key-id]'" in plain.stdout
    assert "FAIL echo password=[REDACTED:password] >/dev/null; false" in plain.stdout
