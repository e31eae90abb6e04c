"""``fileio.atomic_write``: a reader sees the old file or the new one, the mode a file had stays,
and a write that fails or is killed leaves the old content (and no temporary file behind)."""

from __future__ import annotations

import os
import signal
import stat
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from conftest import REPO_ROOT

from gitpilot.fileio import atomic_write, keep, read_kept, rename


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def _strays(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir() if p.name.endswith(".tmp"))


def test_a_rewritten_file_keeps_its_mode_and_an_explicit_mode_is_exact(tmp_path: Path) -> None:
    private = tmp_path / "settings.json"
    private.write_bytes(b"{}\n")
    private.chmod(0o600)
    atomic_write(private, b'{"a": 1}\n')
    assert private.read_bytes() == b'{"a": 1}\n' and _mode(private) == 0o600
    hook = tmp_path / "pre-commit"
    old = os.umask(0o077)  # a strict umask must not take an executable's bits away
    try:
        atomic_write(hook, b"#!/bin/sh\nexit 0\n", mode=0o755)
        fresh = tmp_path / "fresh"
        atomic_write(fresh, b"x")
    finally:
        os.umask(old)
    assert _mode(hook) == 0o755 and os.access(hook, os.X_OK)
    assert subprocess.run([str(hook)]).returncode == 0
    assert _mode(fresh) == 0o600  # a new file without a mode: 0666 less the umask, as open() makes it
    atomic_write(hook, b"#!/bin/sh\nexit 3\n", fsync=True)  # rewritten without a mode: still executable
    assert _mode(hook) == 0o755 and subprocess.run([str(hook)]).returncode == 3
    assert _strays(tmp_path) == []


FAIL_MID_WRITE = """
import resource, signal, sys
from gitpilot.fileio import atomic_write
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
resource.setrlimit(resource.RLIMIT_FSIZE, (4096, resource.RLIM_INFINITY))
try:
    atomic_write(sys.argv[1], b"n" * 65536, fsync=True)
except OSError as exc:
    print(exc.strerror)
    sys.exit(0)
sys.exit(1)
"""


def test_a_write_that_fails_midway_keeps_the_old_content_and_leaves_no_temporary_file(tmp_path: Path) -> None:
    target = tmp_path / "receipt.json"
    target.write_bytes(b"old receipt\n")
    # The file size limit stops the write after 4 KiB, as a full disk would.
    proc = subprocess.run([sys.executable, "-c", FAIL_MID_WRITE, str(target)], cwd=REPO_ROOT,
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.strip() == "File too large"
    assert target.read_bytes() == b"old receipt\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["receipt.json"]


WRITE_FOREVER = """
import sys
from gitpilot.fileio import atomic_write
a, b = b"a" * 2_000_000, b"b" * 2_000_000
print("ready", flush=True)
while True:
    atomic_write(sys.argv[1], b)
    atomic_write(sys.argv[1], a)
"""


def test_readers_of_a_file_rewritten_and_killed_midway_see_only_whole_versions(tmp_path: Path) -> None:
    target = tmp_path / "capsule.md"
    whole = {b"a" * 2_000_000, b"b" * 2_000_000}
    target.write_bytes(b"a" * 2_000_000)
    writer = subprocess.Popen([sys.executable, "-c", WRITE_FOREVER, str(target)], cwd=REPO_ROOT,
                              stdout=subprocess.PIPE)
    try:
        assert writer.stdout is not None and writer.stdout.readline() == b"ready\n"
        seen = set()
        deadline = time.monotonic() + 1.5
        while time.monotonic() < deadline:
            data = target.read_bytes()
            assert data in whole, (len(data), data[:1], data[-1:])
            seen.add(data[:1])
    finally:
        writer.send_signal(signal.SIGKILL)  # killed wherever it is, mid-write most likely
        writer.wait()
        if writer.stdout is not None:
            writer.stdout.close()
    assert seen == {b"a", b"b"}  # the writer really replaced the file while we read
    assert target.read_bytes() in whole


def test_writers_racing_on_one_file_in_one_process_use_their_own_temporary_files(tmp_path: Path) -> None:
    target = tmp_path / "state.json"
    errors: list[BaseException] = []

    def write(n: int) -> None:
        try:
            for _ in range(50):
                atomic_write(target, f"{n}\n".encode() * 1000)
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=write, args=(n,)) for n in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert target.read_bytes() in {f"{n}\n".encode() * 1000 for n in range(8)}
    assert _strays(tmp_path) == []


def test_an_exclusive_write_never_replaces_a_file(tmp_path: Path) -> None:
    target = tmp_path / ".gitpilot.toml"
    atomic_write(target, b"# mine\n", exclusive=True, fsync=True)
    assert target.read_bytes() == b"# mine\n"
    with pytest.raises(FileExistsError):
        atomic_write(target, b"# theirs\n", exclusive=True)
    assert target.read_bytes() == b"# mine\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == [".gitpilot.toml"]


def test_rename_moves_a_symlink_as_itself(tmp_path: Path) -> None:
    (tmp_path / "real-hook").write_text("#!/bin/sh\n")
    (tmp_path / "pre-push").symlink_to("real-hook")
    rename(tmp_path / "pre-push", tmp_path / "pre-push.legacy", fsync=True)
    assert not (tmp_path / "pre-push").exists()
    assert os.readlink(tmp_path / "pre-push.legacy") == "real-hook"


def test_a_kept_record_reads_back_and_one_that_does_not_load_reads_as_none(tmp_path: Path) -> None:
    path = tmp_path / "pilot" / "area" / "tree-0123"  # its directories are made
    assert keep(path, ("key", ["a.py"], {"d": {"word": 2}}))
    assert read_kept(path) == ("key", ["a.py"], {"d": {"word": 2}})
    assert read_kept(tmp_path / "absent") is None
    for broken in (b"", b"\xff\x00garbage", path.read_bytes()[:-3]):
        path.write_bytes(broken)
        assert read_kept(path) is None


def test_a_value_that_cannot_be_kept_leaves_the_old_record_and_no_temporary_file(tmp_path: Path) -> None:
    path = tmp_path / "memo"
    assert keep(path, {"tree": "scoped"})
    assert not keep(path, {"tree": object()})  # not marshalable
    assert read_kept(path) == {"tree": "scoped"}
    assert not keep(path / "under-a-file", {"tree": "other"})  # its directory cannot be made: False, nothing raised
    assert read_kept(path) == {"tree": "scoped"}
    assert _strays(tmp_path) == []
