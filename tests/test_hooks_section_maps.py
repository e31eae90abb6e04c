"""The post-checkout hook keeps section maps current: changed Markdown blobs only."""

from __future__ import annotations

import json
from pathlib import Path

from conftest import git, make_repo, run_pilot


def _mapped(repo: Path) -> set[str]:
    out = git(repo, "notes", "--ref=pilot/sections", "list", check=False)
    return {line.split()[1] for line in out.splitlines() if line.strip()}


def test_checkout_maps_new_markdown_blobs_and_never_reparses(tmp_path: Path, pilot_on_path: Path) -> None:
    repo = make_repo(tmp_path / "r", {"README.md": "# A\n\ntext\n", "docs/guide.md": "# Guide\n\n## Install\n\nrun it\n",
                                      "src/app.py": "x = 1\n"})
    assert run_pilot("hooks", "install", cwd=repo).returncode == 0
    git(repo, "checkout", "-q", "-b", "feature")
    (repo / "docs" / "guide.md").write_text("# Guide\n\n## Install\n\nrun it twice\n")
    git(repo, "commit", "-qam", "guide")
    env_sync = {"GIT_PILOT_HOOKS_SYNC": "1"}
    import os
    import subprocess

    subprocess.run(["git", "checkout", "-q", "main"], cwd=repo, env={**os.environ, **env_sync}, check=True)
    blobs = {git(repo, "rev-parse", f"main:{p}").strip() for p in ("README.md", "docs/guide.md")}
    assert blobs <= _mapped(repo)
    subprocess.run(["git", "checkout", "-q", "feature"], cwd=repo, env={**os.environ, **env_sync}, check=True)
    new_blob = git(repo, "rev-parse", "feature:docs/guide.md").strip()
    assert new_blob in _mapped(repo)
    body = json.loads(git(repo, "notes", "--ref=pilot/sections", "show", new_blob))
    assert "run it twice" not in json.dumps(body)  # maps hold structure and hashes, never the text
    count = len(git(repo, "log", "--oneline", "refs/notes/pilot/sections").splitlines())
    subprocess.run(["git", "checkout", "-q", "main"], cwd=repo, env={**os.environ, **env_sync}, check=True)
    assert len(git(repo, "log", "--oneline", "refs/notes/pilot/sections").splitlines()) == count  # nothing reparsed
    assert not _mapped(repo) & {git(repo, "rev-parse", "main:src/app.py").strip()}
