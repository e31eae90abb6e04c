"""The capsule benchmark: it runs on the small scenario, its JSON has the promised fields, it
catches broken fixture checks, counts the baseline as documented, and the large fixture's
generator is deterministic and realistic in size."""

from __future__ import annotations

import hashlib
import importlib.util
import json
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path
from types import ModuleType

from conftest import REPO_ROOT, git

FIXTURES = REPO_ROOT / "fixtures" / "capsule"


def _bench(*args: str) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([sys.executable, "-m", "bench", "capsule", "--no-corpus", *args], cwd=REPO_ROOT,
                          capture_output=True, timeout=110)


def _harness() -> ModuleType:
    if str(REPO_ROOT) not in sys.path:
        sys.path.insert(0, str(REPO_ROOT))
    import bench.capsule

    return bench.capsule


def test_small_scenario_json_has_the_totals() -> None:
    proc = _bench("--scenario", "small", "--no-speed", "--json")
    assert proc.returncode == 0, proc.stderr.decode()
    data = json.loads(proc.stdout)
    for key in ("baseline_bytes", "capsule_bytes", "reduction", "checks_passed", "checks_total",
                "paraphrased_recall", "baseline_checks_passed", "missed", "scenarios",
                "bm25_checks_passed", "bm25_paraphrased_recall", "capsule_errors"):
        assert key in data, key
    scenario = tomllib.loads((FIXTURES / "small" / "scenario.toml").read_text())
    expected = sum(len(t["check"]) for t in scenario["task"])
    assert data["checks_total"] == expected
    assert data["baseline_checks_passed"] == expected  # the baseline reads every file: a sound fixture
    assert data["fixture_problems"] == [] and data["capsule_errors"] == []
    assert 0 <= data["bm25_checks_passed"] <= expected
    assert data["baseline_bytes"] > 0 and data["capsule_bytes"] > 0
    assert data["reduction"] == round(1 - data["capsule_bytes"] / data["baseline_bytes"], 4)
    assert 0 <= data["checks_passed"] <= expected
    assert len(data["missed"]) == expected - data["checks_passed"]
    assert [s["name"] for s in data["scenarios"]] == ["small"]


def test_text_report_names_each_missed_check_with_its_section() -> None:
    proc = _bench("--scenario", "small", "--no-speed")
    assert proc.returncode == 0, proc.stderr.decode()
    out = proc.stdout.decode()
    assert "total" in out and "paraphrased tasks: recall" in out and "targets:" in out
    data = json.loads(_bench("--scenario", "small", "--no-speed", "--json").stdout)
    for miss in data["missed"]:
        assert repr(miss["text"]) in out
        assert miss["section"]["path"] in out


def test_a_check_missing_from_its_source_fails_the_run(tmp_path: Path) -> None:
    fixtures = tmp_path / "fixtures"
    shutil.copytree(FIXTURES / "small", fixtures / "small", symlinks=True)
    toml = fixtures / "small" / "scenario.toml"
    text = toml.read_text()
    toml.write_text(text.replace('text = "Default: `10` seconds."', 'text = "Default: `15` seconds."', 1))
    proc = _bench("--fixtures", str(fixtures), "--no-speed", "--json")
    assert proc.returncode == 1
    problems = json.loads(proc.stdout)["fixture_problems"]
    assert any("Default: `15` seconds." in p and "is not in its source docs/configuration.md" in p
               for p in problems), problems


def test_baseline_counts_prompt_rules_config_and_context_files_once(tmp_path: Path) -> None:
    harness = _harness()
    repo = tmp_path / "repo"
    files = {
        "AGENTS.md": "# Rules\n\nBe careful.\n",
        "CLAUDE.md": "@AGENTS.md\n",
        "docs/guide.md": "# Guide\n\nText.\n",
        "docs/page.mdx": "# Page\n",
        "vendor/lib/README.md": "# vendored\n",
        "docs/i18n/de/guide.md": "# Anleitung\n",
        "notes.txt": "not Markdown\n",
        ".gitpilot.toml": 'base_branch = "main"\n',
    }
    for rel, body in files.items():
        (repo / rel).parent.mkdir(parents=True, exist_ok=True)
        (repo / rel).write_text(body)
    (repo / "ignored.md").write_text("# untracked\n")
    git(repo, "init", "-q")
    git(repo, "add", "--", *files)
    git(repo, "commit", "-q", "-m", "init")
    base = harness.build_baseline(repo, "Fix the guide")
    assert base.files == ["CLAUDE.md", "AGENTS.md", ".gitpilot.toml", "docs/guide.md", "docs/page.mdx"]
    named = sum(len(files[p].encode()) for p in base.files)
    assert base.bytes == len(base.prompt.encode()) + named
    assert "Fix the guide" in base.prompt and "- docs/guide.md" in base.prompt


def _load_generator() -> ModuleType:
    spec = importlib.util.spec_from_file_location("capsule_bulk_test", FIXTURES / "product" / "bulk.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _digest(root: Path) -> tuple[str, int, int]:
    h = hashlib.sha256()
    count = size = 0
    for path in sorted(p for p in root.rglob("*") if p.is_file()):
        data = path.read_bytes()
        h.update(path.relative_to(root).as_posix().encode() + b"\0" + data)
        if path.suffix == ".md":
            count += 1
            size += len(data)
    return h.hexdigest(), count, size


def test_large_fixture_generator_is_deterministic_and_realistic_in_size(tmp_path: Path) -> None:
    bulk = _load_generator()
    bulk.generate(tmp_path / "a")
    bulk.generate(tmp_path / "b")
    first, count, size = _digest(tmp_path / "a")
    assert _digest(tmp_path / "b")[0] == first
    assert count >= 1000 and size >= 2_500_000
    changelog = (tmp_path / "a" / "CHANGELOG.md").read_text()
    assert changelog.count("\n### Security\n") >= 40


def test_generator_refuses_to_overwrite_hand_written_files(tmp_path: Path) -> None:
    bulk = _load_generator()
    (tmp_path / "CHANGELOG.md").write_text("# hand-written\n")
    try:
        bulk.generate(tmp_path)
    except FileExistsError as exc:
        assert "CHANGELOG.md" in str(exc)
    else:
        raise AssertionError("generate() overwrote a hand-written file")
    assert (tmp_path / "CHANGELOG.md").read_text() == "# hand-written\n"
