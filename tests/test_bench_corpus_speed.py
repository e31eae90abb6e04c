"""The corpus speed benchmark's two resets: a new task forgets only what belongs to tasks (the
section maps and term statistics stay warm); cold forgets every cache git pilot keeps."""

from __future__ import annotations

import sys
from pathlib import Path
from types import ModuleType

from conftest import REPO_ROOT, git, make_repo


def _corpus() -> ModuleType:
    if str(REPO_ROOT) not in sys.path:
        sys.path.insert(0, str(REPO_ROOT))
    import bench.corpus

    return bench.corpus


def _built(tmp_path: Path) -> Path:
    from gitpilot.context.runner import build_capsule
    from gitpilot.repo import Repo

    root = make_repo(tmp_path / "repo", {
        "README.md": "# Demo\n\nA demo.\n",
        "docs/guide.md": "# Guide\n\n## Adding a parser\n\nParsers live in `src/parse.py`.\n",
        "src/parse.py": "def parse_config():\n    pass\n",
    })
    build_capsule(Repo.discover(root), "Add a parser for the `parse_config` settings\n")
    return root


def _refs(root: Path) -> list[str]:
    return git(root, "for-each-ref", "--format=%(refname)", "refs/pilot/", "refs/notes/pilot/").split()


def test_forget_tasks_keeps_the_section_maps_and_term_statistics(tmp_path: Path) -> None:
    root = _built(tmp_path)
    pilot = root / ".git" / "pilot"
    assert any(p.name.startswith("capsule-") for p in pilot.iterdir())
    assert any(r.startswith("refs/pilot/tasks/") for r in _refs(root))
    _corpus().forget_tasks(root)
    assert not any(p.name.startswith("capsule-") for p in pilot.iterdir())
    assert _refs(root) == ["refs/notes/pilot/sections"]
    assert any((pilot / "terms").rglob("*")), "the per-blob term statistics stay"


def test_forget_all_leaves_no_cache(tmp_path: Path) -> None:
    root = _built(tmp_path)
    _corpus().forget_all(root)
    assert not (root / ".git" / "pilot").exists()
    assert _refs(root) == []
