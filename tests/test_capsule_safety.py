"""Safety: credential files never opened, credential sections withheld everywhere, nothing
outside the repository, ignored files named but not read, bad and huge files skipped."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from conftest import REPO_ROOT, git, make_repo

from gitpilot.context.runner import build_capsule
from gitpilot.context.safepaths import MAX_FILE_BYTES
from gitpilot.repo import Repo

# A token in GitHub's format (built here so this file does not hold one literally).
TOKEN = "ghp_" + "A1b2C3d4E5f6G7h8I9j0" * 2
OPEN_PROBE = """
import json, sys
opened = []
sys.addaudithook(lambda ev, args: opened.append(str(args[0])) if ev == "open" and args else None)
from gitpilot.context.runner import build_capsule
from gitpilot.repo import Repo
res = build_capsule(Repo.discover(sys.argv[1]), sys.argv[2])
print(json.dumps({"opened": opened, "text": res.text}))
"""


def _probe(root: Path, task: str) -> dict[str, object]:
    env = dict(os.environ, PYTHONPATH=str(REPO_ROOT))
    proc = subprocess.run([sys.executable, "-c", OPEN_PROBE, str(root), task], capture_output=True, env=env)
    assert proc.returncode == 0, proc.stderr.decode()
    return json.loads(proc.stdout.decode().strip().splitlines()[-1])  # type: ignore[no-any-return]


def test_credential_files_are_never_opened(tmp_path: Path) -> None:
    toml = (
        '[leanloop.context]\nfiles = ["*.md", "*.env", "config/*"]\n'
        'always_include = [".env", "deploy/id_rsa", "config/credentials.json"]\n'
    )
    root = make_repo(
        tmp_path / "repo",
        {
            ".gitpilot.toml": toml,
            "CLAUDE.md": "# Memory\n\nNotes.\n\n@.npmrc\n",
            ".env": "API=1\n",
            ".npmrc": "//registry:_authToken=x\n",
            "deploy/id_rsa": "key\n",
            "config/credentials.json": "{}\n",
            "config/app.md": "# App\n\nSettings.\n",
            "docs/guide.md": "# Guide\n\nHow to deploy.\n",
        },
    )
    got = _probe(root, "How do I deploy the app?")
    opened = [os.path.realpath(p) for p in got["opened"]]  # type: ignore[union-attr]
    for name in (".env", ".npmrc", "deploy/id_rsa", "config/credentials.json"):
        assert os.path.realpath(root / name) not in opened, name
    assert os.path.realpath(root / "docs/guide.md") in opened  # the probe does see ordinary reads
    text = str(got["text"])
    for name in (".env", ".npmrc", "deploy/id_rsa", "config/credentials.json"):
        assert f"`{name}`: named like a credential file: never opened" in text


def test_a_section_with_a_credential_is_withheld_from_capsule_manifest_notes_and_record(
    tmp_path: Path,
) -> None:
    root = make_repo(
        tmp_path / "repo",
        {
            "AGENTS.md": f"# Guide\n\nDeploy with care.\n\n## Tokens\n\nUse {TOKEN} for the deploy bot.\n\n"
            "## Deploy\n\nRun make deploy.\n",
            "docs/deploy.md": f"# Deploy\n\nThe deploy token is {TOKEN}.\n\n## Steps\n\nRun make deploy.\n",
        },
    )
    repo = Repo.discover(root)
    res = build_capsule(repo, "How does the deploy bot deploy?")
    assert TOKEN not in res.text
    assert "Deploy with care." in res.text and "Run make deploy." in res.text
    assert "Withheld" in res.text and "`AGENTS.md` § Guide › Tokens" in res.text
    assert res.json_path is not None and TOKEN not in res.json_path.read_text()
    everything = git(root, "log", "-p", "--all", "--format=%H", "--", ".")  # refs include notes and tasks
    notes = git(root, "notes", "--ref=pilot/sections", "list")
    bodies = "".join(git(root, "cat-file", "-p", line.split()[0]) for line in notes.splitlines())
    record = git(root, "show", f"refs/pilot/tasks/{res.task_id}:capsule.md")
    assert TOKEN not in bodies and TOKEN not in record
    assert everything  # sanity: the history was read


def test_paths_outside_the_repository_are_refused(tmp_path: Path) -> None:
    outside = tmp_path / "outside.md"
    outside.write_text("# Outside\n\nSECRET-OUTSIDE text.\n")
    root = make_repo(
        tmp_path / "repo",
        {"CLAUDE.md": "# Memory\n\n@../outside.md\n\n@~/notes.md\n", "docs/a.md": "# A\n\nalpha\n"},
    )
    os.symlink(outside, root / "docs" / "link.md")
    git(root, "add", "docs/link.md")
    git(root, "commit", "-qm", "link")
    got = _probe(root, "alpha outside text")
    opened = [os.path.realpath(p) for p in got["opened"]]  # type: ignore[union-attr]
    assert os.path.realpath(outside) not in opened
    text = str(got["text"])
    assert "SECRET-OUTSIDE" not in text
    assert "`../outside.md`: imported by CLAUDE.md: outside the repository, refused" in text
    assert "`~/notes.md`: imported by CLAUDE.md: outside the repository, refused" in text
    assert "`docs/link.md`: outside the repository: refused" in text


def test_ignored_files_are_named_and_not_read(tmp_path: Path) -> None:
    root = make_repo(
        tmp_path / "repo", {".gitignore": "CLAUDE.local.md\nscratch/\n", "docs/a.md": "# A\n\nalpha\n"}
    )
    (root / "CLAUDE.local.md").write_text("# Local\n\nIGNORED-TEXT\n")
    (root / "scratch").mkdir()
    (root / "scratch" / "notes.md").write_text("# Notes\n\nIGNORED-TEXT too\n")
    (root / "AGENTS.md").write_text("# Agents\n\nIGNORED? no: untracked but not ignored.\n")
    (root / ".gitignore").write_text("CLAUDE.local.md\nscratch/\nAGENTS.md\n")
    got = _probe(root, "alpha")
    opened = [os.path.realpath(p) for p in got["opened"]]  # type: ignore[union-attr]
    for name in ("CLAUDE.local.md", "scratch/notes.md", "AGENTS.md"):
        assert os.path.realpath(root / name) not in opened, name
    text = str(got["text"])
    assert "IGNORED" not in text
    assert "`CLAUDE.local.md`: ignored by git: not read" in text
    assert "`scratch/notes.md`: ignored by git: not read" in text
    assert "`AGENTS.md`: ignored by git: not read" in text


def test_non_utf8_and_huge_files_are_skipped_and_named(tmp_path: Path) -> None:
    root = make_repo(tmp_path / "repo", {"docs/a.md": "# A\n\nalpha beta\n"})
    (root / "docs" / "latin1.md").write_bytes("# Caf\xe9\n\nalpha\n".encode("latin-1"))
    (root / "docs" / "huge.md").write_text("# Huge\n\n" + "alpha " * (MAX_FILE_BYTES // 5))
    git(root, "add", "-A")
    git(root, "commit", "-qm", "more")
    res = build_capsule(Repo.discover(root), "alpha beta")
    assert "`docs/latin1.md`: not UTF-8 text: skipped" in res.text
    assert f"`docs/huge.md`: larger than {MAX_FILE_BYTES} bytes: skipped" in res.text
    assert "alpha beta" in res.text
