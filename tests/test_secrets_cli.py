"""Secrets through the real command line (issue 13, items 3-7): what a check log, the capsule,
its manifest and the section-map notes show, and which files git pilot's processes open."""

from __future__ import annotations

from pathlib import Path

from conftest import make_repo, run_pilot

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
