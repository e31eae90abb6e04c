"""Secrets through the real command line (issue 13, items 3-7): what a check log, the capsule,
its manifest and the section-map notes show, and which files git pilot's processes open."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import git, make_repo, pilot_env, run_pilot

from gitpilot.redact import is_credential_filename

GITHUB = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"
KEY_BODY = "MIIEowIBAAKCAQEA7bq0" + "x" * 40
LOG_LINES = [
    "collecting tests ... 12 items",
    "tests/test_token.py::test_rotate_token_after_expiry PASSED",
    f"export GH_TOKEN={GITHUB}",
    "aws configure set aws_secret_access_key wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
    "mysql --password hunter2 --user root",
    "Environment: DB_HOST: db DB_PASSWORD: s3cretPw DB_NAME: app",
    "  --password TEXT       Password for the database",
    "-----BEGIN RSA PRIVATE KEY-----",
    KEY_BODY,
    "-----END RSA PRIVATE KEY-----",
    "warning: DB_PASSWORD: missing, using default",
    "FAILED tests/test_db.py::test_connect - assert 1 == 2",
]
CLEAR = (GITHUB, "wJalrXUtnFEMI", "hunter2", "s3cretPw", KEY_BODY)


def leaking_project(tmp_path: Path) -> Path:
    log = "\n".join(LOG_LINES) + "\n"
    config = '[[check]]\nname = "unit"\nrun = "cat leak.txt; exit 1"\n'
    return make_repo(tmp_path / "r", {".gitpilot.toml": config, "leak.txt": log})


def test_check_log_is_redacted_by_default_raw_is_exact_and_the_file_stays_exact(tmp_path: Path) -> None:
    repo = leaking_project(tmp_path)
    res = run_pilot("check", cwd=repo)
    assert res.returncode == 1
    assert "full log: git pilot check --log unit" in res.stdout
    assert not any(secret in res.stdout for secret in CLEAR)  # the excerpt, as before
    shown = run_pilot("check", "--log", "unit", cwd=repo)
    assert shown.returncode == 0, shown.stderr
    assert not any(secret in shown.stdout for secret in CLEAR), shown.stdout
    lines = shown.stdout.splitlines()
    assert len(lines) == len(LOG_LINES)  # one line per line: line numbers stay true
    assert "export GH_TOKEN=[REDACTED:github-token]" in lines
    assert "aws configure set aws_secret_access_key [REDACTED:aws-secret-key]" in lines
    assert "mysql --password [REDACTED:password] --user root" in lines
    assert "Environment: DB_HOST: db DB_PASSWORD: [REDACTED:password] DB_NAME: app" in lines
    assert lines[7:10] == ["[REDACTED:private-key]"] * 3
    # ordinary lines are untouched
    for i in (0, 1, 6, 10, 11):
        assert lines[i] == LOG_LINES[i]
    raw = run_pilot("check", "--log", "unit", "--raw", cwd=repo)
    assert raw.returncode == 0 and raw.stdout == "\n".join(LOG_LINES) + "\n"
    on_disk = list((repo / ".git" / "pilot" / "checks").glob("*/*/*.log"))
    assert len(on_disk) == 1 and on_disk[0].read_text() == raw.stdout
    bad = run_pilot("check", "--raw", cwd=repo)
    assert bad.returncode == 2 and "--raw goes with --log NAME" in bad.stderr


# --- credential files are never opened (items 5-6) -------------------------------------------------

CREDENTIALS = {
    ".env": "DB_PASSWORD=hunter2\n",
    "id_rsa": "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQ\n"
              "-----END OPENSSH PRIVATE KEY-----\n",
    "deploy/server.pem": "-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQ\n"
                         "-----END PRIVATE KEY-----\n",
    ".npmrc": "//registry.npmjs.org/:_authToken=npm_" + "A" * 36 + "\n",
    "config/credentials.json": '{"token": "x"}\n',
}


def credential_repo(tmp_path: Path) -> Path:
    """A fresh clone (every index entry racily clean, so git would re-hash what it is asked about)
    with credential files tracked, and a harmless-named symlink to .env imported by CLAUDE.md."""
    files = {**CREDENTIALS,
             "CLAUDE.md": "# Rules\n\nRun the tests before committing.\n\n@docs/env.md\n@docs/guide.md\n",
             "docs/guide.md": "# Guide\n\n## Deploying\n\nDeploy with the deploy script.\n",
             "app/main.py": "def main():\n    return 1\n",
             ".gitpilot.toml": '[[check]]\nname = "unit"\nrun = "true"\n'}
    origin = make_repo(tmp_path / "origin", files)
    os.symlink("../.env", origin / "docs" / "env.md")
    git(origin, "add", "-A")
    git(origin, "commit", "-q", "-m", "env link")
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", str(origin), str(clone))
    return clone


def opened_credentials(trace: Path, repo: Path) -> list[str]:
    """Credential files any traced process opened (the paths resolved, so a link counts as its target)."""
    real_repo = os.path.realpath(repo)
    found = set()
    for line in trace.read_text(errors="replace").splitlines():
        m = re.search(r'open(?:at)?\((?:AT_FDCWD|\d+)?,? ?"([^"]+)"', line)
        if m is None or "ENOENT" in line:
            continue
        path = m.group(1)
        full = os.path.realpath(path if os.path.isabs(path) else os.path.join(repo, path))
        if full.startswith(real_repo + os.sep):
            rel = os.path.relpath(full, real_repo)
            if rel.split(os.sep)[0] != ".git" and is_credential_filename(rel):
                found.add(rel)
    return sorted(found)


def traced(tmp_path: Path, repo: Path, *args: str) -> tuple[subprocess.CompletedProcess[str], Path]:
    strace = shutil.which("strace")
    if strace is None:
        pytest.skip("strace is not installed (apt-get install strace)")
    trace = tmp_path / f"trace-{args[0]}.txt"
    proc = subprocess.run([strace, "-f", "-qq", "-e", "trace=open,openat", "-o", str(trace),
                           sys.executable, "-m", "gitpilot", *args], cwd=repo, capture_output=True, text=True,
                          env=pilot_env(), timeout=120)
    return proc, trace


def test_no_process_of_git_pilots_opens_a_credential_file(tmp_path: Path) -> None:
    repo = credential_repo(tmp_path)
    # Each command reads the files it needs (the trace sees those opens), and no credential file.
    for args, needed in ((("capsule", "--task", "Fix the deploy script in app/main.py"), "docs/guide.md"),
                         (("sourcemap",), "app/main.py")):
        res, trace = traced(tmp_path, repo, *args)
        assert res.returncode == 0, res.stderr
        assert opened_credentials(trace, repo) == [], args
        assert needed in trace.read_text(), args
    # The warm source map: the stored map is served, and git's status still opens none of them
    # (nothing rewrote the index, so its entries are still racily clean).
    res, trace = traced(tmp_path, repo, "sourcemap", "--json")
    assert res.returncode == 0 and json.loads(res.stdout)["cached"] is True, res.stdout
    assert opened_credentials(trace, repo) == []


def test_the_search_for_the_tasks_names_opens_no_credential_file_beside_the_code(tmp_path: Path) -> None:
    """The task's names are searched for with git grep over a few directories that hold the code
    files: a credential-named file in such a directory (here one with more subdirectories than
    the search's pathspecs may name) is never opened by it, and the code beside it is still read."""
    files = {f"app/m{i}/mod.py": f"def f{i}():\n    return load_settings_file()\n" for i in range(70)}
    files.update({
        "app/main.py": "def load_settings_file():\n    return 1\n",
        "app/.env": "DB_PASSWORD=hunter2\n",
        "app/README.md": "# App\n\n## Settings\n\nSettings live in app.\n",
        "AGENTS.md": "# Guide\n\nUse it.\n",
    })
    files.update({f"docs/guide/page{i}.md": f"# Page {i}\n\n## Overview {i}\n\n"
                  + "".join(f"Paragraph {j} of page {i} describes the dashboard layout.\n" for j in range(15))
                  for i in range(40)})
    origin = make_repo(tmp_path / "origin", files)
    repo = tmp_path / "clone"
    git(tmp_path, "clone", "-q", str(origin), str(repo))
    res, trace = traced(tmp_path, repo, "capsule", "--task", "Make `load_settings_file` accept a path in the app settings")
    assert res.returncode == 0, res.stderr
    assert opened_credentials(trace, repo) == []
    assert "app/m7/mod.py" in trace.read_text()  # the search did run, over the code files


def test_a_credential_file_behind_a_harmless_named_symlink_is_never_read(tmp_path: Path) -> None:
    repo = credential_repo(tmp_path)
    res, trace = traced(tmp_path, repo, "capsule", "--task", "Deploy the guide changes", "--json")
    assert res.returncode == 0, res.stderr
    assert opened_credentials(trace, repo) == []
    capsule = Path(json.loads(res.stdout)["path"]).read_text()
    manifest = res.stdout
    notes = git(repo, "notes", "--ref=pilot/sections", "list", check=False)
    bodies = "".join(git(repo, "notes", "--ref=pilot/sections", "show", ln.split()[1], check=False)
                     for ln in notes.splitlines())
    env_blob = git(repo, "rev-parse", "HEAD:.env").strip()
    for text in (capsule, manifest, bodies):
        assert "hunter2" not in text and "DB_PASSWORD" not in text
        assert env_blob not in text
    skipped = json.loads(res.stdout)["manifest"]["skipped"]
    assert {"path": "docs/env.md", "why": "named like a credential file: never opened (a symlink to .env)"} in skipped


# --- a withheld section is named (item 7) -----------------------------------------------------------

def test_a_section_withheld_for_a_credential_format_is_named_in_the_capsule(tmp_path: Path) -> None:
    body = "\n".join(f"Line {i} about the deploy pipeline and the staging servers." for i in range(40))
    deploy = (f"# Deploy\n\n## Steps\n\nRun the deploy script to staging.\n{body}\n\n## Token\n\n"
              f"The deploy token is {GITHUB} for staging.\n\n## Rollback\n\nRoll back with the script.\n{body}\n")
    files = {"CLAUDE.md": "# Rules\n\nRun the tests.\n", "docs/deploy.md": deploy}
    for i in range(6):  # enough other context that the capsule selects, instead of showing all in full
        files[f"docs/other{i}.md"] = f"# Other {i}\n\n## Topic\n\n" + "\n".join(
            f"Unrelated words {j} about gardening." for j in range(80)) + "\n"
    repo = make_repo(tmp_path / "r", files)
    res = run_pilot("capsule", "--task", "Fix the staging deploy token", "--json", cwd=repo)
    assert res.returncode == 0, res.stderr
    data = json.loads(res.stdout)
    capsule = Path(data["path"]).read_text()
    assert GITHUB not in capsule and GITHUB not in res.stdout
    assert data["manifest"]["withheld"] == [{"path": "docs/deploy.md", "heading": "Deploy › Token", "start": 47,
                                             "end": 49, "why": "holds a github-token"}]
    assert "- `docs/deploy.md` § Deploy › Token · lines 47-49 · holds a github-token\n" in capsule
    assert "Withheld (a known credential format is in the text; never copied anywhere):" in capsule
