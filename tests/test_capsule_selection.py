"""Selection rules of the capsule on small synthetic repositories: what reaches the agent, and what not."""

from __future__ import annotations

import os
from pathlib import Path

from conftest import git, make_repo

from gitpilot.context.capsule import build_capsule
from gitpilot.repo import Repo


def _filler(n: int = 30) -> dict[str, str]:
    """Unrelated user documentation, so the repository is not small enough to be shown whole."""
    return {
        f"docs/guide/page{i}.md": f"# Page {i}\n\n## Overview {i}\n\n"
        + "".join(
            f"Paragraph {j} of page {i} describes the dashboard layout and colours.\n" for j in range(12)
        )
        for i in range(n)
    }


def _part(text: str, head: str, nxt: str) -> str:
    return text[text.index(head) : text.index(nxt)]


def _excerpt_paths(text: str) -> list[str]:
    return [line.split("`")[1] for line in text.splitlines() if line.startswith("#### `")]


def test_a_symlink_or_copy_of_a_file_shown_in_full_is_never_shown_again(tmp_path: Path) -> None:
    agents = (
        "# Guide\n\nKeep diffs small.\n\n## Secrets\n\nNever log tokens.\n\n"
        "## Writing tests\n\nEvery token refresh change needs a pytest case in tests/auth/.\n"
    )
    files = {"AGENTS.md": agents, ".github/copilot-instructions.md": agents, **_filler()}
    root = make_repo(tmp_path / "repo", files)
    os.symlink("AGENTS.md", root / "CLAUDE.md")
    git(root, "add", "CLAUDE.md")
    git(root, "commit", "-qm", "link")
    res = build_capsule(Repo.discover(root), "Add tests for the token refresh")
    assert res.text.count("Never log tokens.") == 1
    assert res.text.count("Every token refresh change needs a pytest case") == 1
    assert _excerpt_paths(res.text) == ["AGENTS.md"]  # neither the link nor the copy
