"""The capsule's speed caches are only ever faster: a reused statistic, map or search result is
exactly what a fresh build computes, an edited file's new content is used, and the same inputs
give the same bytes."""

from __future__ import annotations

import os
import time
from pathlib import Path

from conftest import git, make_repo, run_pilot

FILES = {
    "AGENTS.md": "# Guide\n\nUse tabs.\n",
    "docs/guide.md": "# Guide\n\n## Adding a parser\n\nParsers live in `src/parse.py`.\n",
    "src/parse.py": "def parse_config():\n    pass\n",
}
TASK = "Add a parser for the `parse_config` settings"


def test_a_symlink_whose_target_ends_in_a_newline_does_not_stop_the_express_path(tmp_path: Path) -> None:
    from gitpilot.context import stamp

    root = make_repo(tmp_path / "repo", FILES)
    # As in real repositories: a link written with `echo path > file` and committed as a symlink.
    os.symlink("docs/guide.md\n", root / "README.md")
    git(root, "add", "README.md")
    git(root, "commit", "-qm", "readme link")
    first = run_pilot("capsule", "--task", TASK, "--print", cwd=root).stdout
    time.sleep(stamp.RACY_NS / 1e9 + 0.2)  # out of the racy window: the next check writes signatures
    assert run_pilot("capsule", "--task", TASK, "--print", cwd=root).stdout == first
    hit = stamp.express(str(root), TASK)
    assert hit is not None and hit.body.decode("utf-8") == first
    (root / "docs" / "guide.md").write_text(FILES["docs/guide.md"] + "\nParsers are registered.\n")
    assert stamp.express(str(root), TASK) is None
    assert "Parsers are registered." in run_pilot("capsule", "--task", TASK, "--print", cwd=root).stdout
