"""Deterministic output: the same inputs give the same bytes under any PYTHONHASHSEED.

Three identical repositories (dates are pinned, so every object id is the same) built from the
``product`` capsule fixture, with awkward extras (non-ASCII paths, a secret, a binary, a
symlink), are driven by every reporting command under three hash seeds; outputs and the notes
written must be byte-identical once the repository's own path is replaced.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from conftest import REPO_ROOT, git, run_pilot

FIXTURE = REPO_ROOT / "fixtures" / "capsule" / "product" / "repo"
SEEDS = ("0", "1", "4242")
COMMANDS: tuple[tuple[str, ...], ...] = (
    ("capsule", "--task", "fix proration of invoices in the billing service and the dunning job", "--print"),
    ("capsule", "--task", "fix proration of invoices in the billing service and the dunning job", "--json"),
    ("sourcemap",),
    ("sourcemap", "--json", "--budget", "900"),
    ("review-budget", "--json"),
    ("review-budget",),
    ("status", "--json"),
    ("config", "show", "--json"),
    ("optimize", "propose", "--json"),
    ("efficiency", "--json"),
)


def _build(path: Path) -> Path:
    shutil.copytree(FIXTURE, path, symlinks=True)
    git(path, "init", "-q", "-b", "main")
    git(path, "add", "-A")
    git(path, "commit", "-qm", "product")
    git(path, "checkout", "-q", "-b", "feature")
    extra = {
        "dóc é/gúide ü.md": "# Gúide\n\n## Invoices ü\nProration of invoices is done in billing.\n",
        "services/api/billing/leak.go": 'package billing\n\nconst key = "ghp_' + "Z" * 36 + '"\n\nfunc Prorate() {}\n',
        "web/src/lib/zeta.ts": "export function dunningRetry() {}\nexport const alpha = 1;\n",
    }
    for name, text in extra.items():
        (path / name).parent.mkdir(parents=True, exist_ok=True)
        (path / name).write_text(text)
    (path / "blob.bin").write_bytes(bytes(range(256)))
    (path / "link.md").symlink_to("SECURITY.md")
    git(path, "add", "-A")
    git(path, "commit", "-qm", "feature work")
    return path


def _notes(repo: Path) -> str:
    out = []
    for ref in git(repo, "for-each-ref", "--format=%(refname)", "refs/notes/").split():
        out.append(ref)
        out.append(git(repo, "ls-tree", "-r", ref))
    return "\n".join(out)


def test_same_inputs_same_bytes_under_any_hash_seed(tmp_path: Path) -> None:
    repos = {seed: _build(tmp_path / f"seed-{seed}" / "repo") for seed in SEEDS}
    heads = {git(r, "rev-parse", "HEAD") for r in repos.values()}
    assert len(heads) == 1  # truly the same inputs
    outputs: dict[str, dict[str, str]] = {seed: {} for seed in SEEDS}
    for args in COMMANDS:
        for seed, repo in repos.items():
            res = run_pilot(*args, cwd=repo, env={"PYTHONHASHSEED": seed, "GIT_PILOT_NOW": "2024-01-01T00:00:00Z"})
            assert res.returncode == 0, (args, res.stderr)
            outputs[seed][" ".join(args)] = (res.stdout + res.stderr).replace(str(repo), "<repo>")
    for seed, repo in repos.items():
        outputs[seed]["notes"] = _notes(repo)
        capsule = sorted((repo / ".git" / "pilot").glob("capsule-*.md"))
        outputs[seed]["capsule file"] = capsule[0].read_text() if capsule else "missing"
    reference = outputs[SEEDS[0]]
    for seed in SEEDS[1:]:
        for key, text in reference.items():
            assert outputs[seed][key] == text, f"{key} differs between PYTHONHASHSEED={SEEDS[0]} and {seed}"
    assert "ghp_" not in "".join(reference.values())
