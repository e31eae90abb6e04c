"""``optimize enable|disable claude`` and ``optimize undo`` against damaged local files: Claude's
``.claude/settings.local.json`` that is not JSON, of the wrong shape, not UTF-8, a directory or a
symlink; receipts that are damaged. One clear line, exit 1, the file byte-identical.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import git, make_repo, run_pilot
from test_qa_support import assert_clear_error, standard_files

SETTINGS = Path(".claude") / "settings.local.json"


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    r = make_repo(tmp_path / "repo", standard_files())
    (r / ".claude").mkdir()
    return r


@pytest.mark.parametrize("data, needle", [
    (b"{bad", "invalid JSON"),
    (b"[]", "top level must be a JSON object"),
    (b'{"hooks": 5}', "'hooks' must be a JSON object"),
    (b'{"hooks": {"Stop": 5}}', "'hooks.Stop' must be a list"),
])
def test_a_broken_settings_file_is_named_and_kept(repo: Path, data: bytes, needle: str) -> None:
    (repo / SETTINGS).write_bytes(data)
    assert_clear_error(run_pilot("optimize", "enable", "claude", cwd=repo), 1, "settings.local.json", needle)
    assert (repo / SETTINGS).read_bytes() == data


def test_settings_that_are_a_symlink_or_tracked_are_refused(repo: Path, tmp_path: Path) -> None:
    target = tmp_path / "shared-settings.json"
    target.write_text("{}\n")
    (repo / SETTINGS).symlink_to(target)
    assert_clear_error(run_pilot("optimize", "enable", "claude", cwd=repo), 1, "is a symlink")
    assert target.read_text() == "{}\n"
    (repo / SETTINGS).unlink()
    (repo / SETTINGS).write_text("{}\n")
    git(repo, "add", "-f", str(SETTINGS))
    assert_clear_error(run_pilot("optimize", "enable", "claude", cwd=repo), 1, "tracked by git")
    assert (repo / SETTINGS).read_text() == "{}\n"


def test_hook_groups_of_the_wrong_shape(repo: Path) -> None:
    data = b'{"hooks": {"Stop": [5, {"hooks": 7}]}}'
    (repo / SETTINGS).write_bytes(data)
    assert_clear_error(run_pilot("optimize", "enable", "claude", cwd=repo), 1, "settings.local.json")
    assert (repo / SETTINGS).read_bytes() == data


def test_settings_not_utf8_or_a_directory(repo: Path) -> None:
    (repo / SETTINGS).write_bytes(b"\xff\xfe{}")
    assert_clear_error(run_pilot("optimize", "enable", "claude", cwd=repo), 1, "settings.local.json")
    (repo / SETTINGS).unlink()
    (repo / SETTINGS).mkdir()
    assert_clear_error(run_pilot("optimize", "enable", "claude", cwd=repo), 1, "settings.local.json")


def test_a_receipt_that_is_not_json_is_named(repo: Path) -> None:
    receipts = repo / ".git" / "pilot" / "receipts"
    receipts.mkdir(parents=True)
    (receipts / "r1.json").write_bytes(b"\x00\xff not json")
    assert_clear_error(run_pilot("optimize", "undo", "r1", cwd=repo), 1, "r1.json", "not a readable receipt")


def test_a_receipt_of_the_wrong_shape_is_named(repo: Path) -> None:
    receipts = repo / ".git" / "pilot" / "receipts"
    receipts.mkdir(parents=True)
    for body in (b"[]", b"{}", b'{"id": 5, "state": "applied"}'):
        (receipts / "r1.json").write_bytes(body)
        assert_clear_error(run_pilot("optimize", "undo", "r1", cwd=repo), 1, "r1.json")
        assert_clear_error(run_pilot("optimize", "undo", "some-name", cwd=repo), 1)
