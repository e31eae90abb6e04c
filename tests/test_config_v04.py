"""A v0.4 ``.autopilot/config.json`` works unchanged: plain-string checks are commands, the whole
``reviewer.adaptive`` block is read (and the TOML takes it under ``[reviewer.adaptive]``), the
refusals hold in both formats, ``config migrate`` keeps every value in force, and ``config show``
shows the values in force. Every test goes through the real command line on a real repository."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path
from typing import Any

import pytest
from conftest import git, make_repo, run_pilot
from test_qa_support import assert_clear_error

# The example configuration of the v0.4 LeanLoop documentation, as a user would have it.
SEED_EXAMPLE: dict[str, Any] = {
    "leanloop": {
        "enabled": True,
        "context": {
            "instructionFiles": ["CLAUDE.md", "AGENTS.md"],
            "alwaysInclude": ["DECISIONS.md#Security"],
            "alwaysIncludeHeadings": ["safety", "security", "never", "must not"],
            "maxExcerptBytes": 12000,
            "maxSectionBytes": 4000,
        },
        "checks": {"timeoutMinutes": 30, "failureExcerptLines": 60, "failureExcerptBytes": 6000,
                   "reuseUnchangedPasses": True, "keepRuns": 10},
    },
    "reviewer": {
        "maxRounds": 2,
        "adaptive": {
            "enabled": True, "docsOnlyRounds": 0, "smallRounds": 1, "normalRounds": 2, "highRiskRounds": None,
            "smallMaxFiles": 3, "smallMaxLines": 80,
            "docsExtensions": [".md", ".markdown", ".txt", ".rst", ".adoc"],
            "highRiskPaths": ["src/billing-core/**"], "highRiskKeywords": ["LEGACY_FLAG"],
            "useDefaultHighRisk": True,
        },
    },
    "quota": {"autoResume": False, "graceMinutes": 2},
    "checks": ["test -f README.md", {"name": "lint", "command": "true"}],
}


def legacy_repo(tmp_path: Path, config: dict[str, Any] | str, files: dict[str, str] | None = None) -> Path:
    text = config if isinstance(config, str) else json.dumps(config, indent=2)
    repo = make_repo(tmp_path / "repo", {"README.md": "# demo\n", "src/app.py": "X = 1\n",
                                         ".autopilot/config.json": text, **(files or {})})
    git(repo, "checkout", "-q", "-b", "feature")
    return repo


def show(repo: Path) -> dict[str, Any]:
    res = run_pilot("config", "show", "--json", cwd=repo)
    assert res.returncode == 0, res.stderr
    assert res.stderr == "", res.stderr  # no warning of any kind
    data: dict[str, Any] = json.loads(res.stdout)
    return data


def budget(repo: Path) -> dict[str, Any]:
    res = run_pilot("review-budget", "--json", cwd=repo)
    assert res.returncode == 0, res.stderr
    data: dict[str, Any] = json.loads(res.stdout)
    return data


def test_plain_string_checks_are_commands(tmp_path: Path) -> None:
    repo = legacy_repo(tmp_path, {"checks": ["test -f README.md", "sh -c 'echo broken; exit 3'"]})
    res = run_pilot("check", cwd=repo)
    assert res.returncode == 1, res.stderr
    assert "must be a table" not in res.stderr
    out = res.stdout.splitlines()
    assert out[0].startswith("PASS test -f README.md (")
    assert out[1].startswith("FAIL sh -c 'echo broken; exit 3' exit 3 ")
    assert "broken" in res.stdout and out[-1].startswith("checks: 1 passed, 1 failed")
    only = run_pilot("check", "--only", "1", cwd=repo)  # by number, as v0.4's --only took it
    assert only.returncode == 0 and "reused" in only.stdout


def test_the_v04_documentation_example_loads_without_a_warning_and_is_in_force(tmp_path: Path) -> None:
    repo = legacy_repo(tmp_path, SEED_EXAMPLE)
    data = show(repo)
    settings = data["settings"]
    assert data["source"] == "v0.4"
    assert settings["reviewer.adaptive.high_risk_paths"] == ["src/billing-core/**"]
    assert settings["reviewer.adaptive.high_risk_keywords"] == ["LEGACY_FLAG"]
    assert settings["reviewer.max_rounds"] == 2
    assert settings["reviewer.adaptive.high_risk_rounds"] == 2  # null: maxRounds
    assert settings["leanloop.context.always_include"] == ["DECISIONS.md#Security"]
    assert [c["run"] for c in data["checks"]] == ["test -f README.md", "true"]
    # The user's own high-risk rules decide the budget.
    (repo / "src/billing-core").mkdir(parents=True)
    (repo / "src/billing-core/ledger.py").write_text("X = 1\n")
    b = budget(repo)
    assert b["class"] == "high-risk" and "src/billing-core/ledger.py is a configured high-risk path" in \
        " ".join(b["reasons"])
    (repo / "src/billing-core/ledger.py").unlink()
    (repo / "src/app.py").write_text("X = LEGACY_FLAG\n")
    b = budget(repo)
    assert b["class"] == "high-risk" and "a configured high-risk keyword (LEGACY_FLAG)" in " ".join(b["reasons"])


def test_a_v04_config_keeps_its_three_rounds_in_config_show(tmp_path: Path) -> None:
    repo = legacy_repo(tmp_path, {"checks": ["true"]})
    settings = show(repo)["settings"]
    assert settings["reviewer.max_rounds"] == 3
    assert settings["reviewer.adaptive.high_risk_rounds"] == 3
    text = run_pilot("config", "show", cwd=repo).stdout
    assert "reviewer.max_rounds = 3  (default)" in text


def test_adaptive_false_keeps_a_fixed_max_rounds(tmp_path: Path) -> None:
    repo = legacy_repo(tmp_path, {"reviewer": {"maxRounds": 3, "adaptive": False}})
    assert show(repo)["settings"]["reviewer.adaptive.enabled"] is False
    (repo / "README.md").write_text("# demo\n\nMore words.\n")
    b = budget(repo)
    assert (b["class"], b["rounds"], b["adaptive"]) == ("docs", 3, False)


@pytest.mark.parametrize("fmt", ["json", "toml"])
def test_the_adaptive_block_in_both_formats(tmp_path: Path, fmt: str) -> None:
    block = {"docsOnlyRounds": 1, "smallMaxFiles": 1, "smallMaxLines": 5, "docsExtensions": [".md"],
             "useDefaultHighRisk": False, "highRiskPaths": ["vendor/"]}
    if fmt == "json":
        repo = legacy_repo(tmp_path, {"reviewer": {"maxRounds": 3, "adaptive": block}})
    else:
        toml = ("[reviewer]\nmax_rounds = 3\n\n[reviewer.adaptive]\ndocs_only_rounds = 1\nsmall_max_files = 1\n"
                'small_max_lines = 5\ndocs_extensions = [".md"]\nuse_default_high_risk = false\n'
                'high_risk_paths = ["vendor/"]\n')
        repo = make_repo(tmp_path / "repo", {"README.md": "# demo\n", "src/app.py": "X = 1\n",
                                             ".gitpilot.toml": toml})
        git(repo, "checkout", "-q", "-b", "feature")
        assert show(repo)["source"] == "toml"
    (repo / "README.md").write_text("# demo\n\nMore.\n")
    b = budget(repo)
    assert (b["class"], b["rounds"]) == ("docs", 1), b["reasons"]  # docs_only_rounds
    (repo / "notes.txt").write_text("plain text\n")  # .txt is not documentation here
    assert budget(repo)["class"] == "normal"  # two files: more than small_max_files
    (repo / "README.md").write_text("# demo\n")
    b = budget(repo)
    assert (b["class"], b["rounds"]) == ("small", 1)
    (repo / "notes.txt").unlink()
    (repo / "package.json").write_text("{}\n")  # a built-in high-risk path, switched off
    b = budget(repo)
    assert (b["class"], b["rounds"]) == ("small", 1), b["reasons"]
    (repo / "vendor").mkdir()
    (repo / "vendor/lib.js").write_text("x\n")  # the configured path still counts
    b = budget(repo)
    assert (b["class"], b["rounds"]) == ("high-risk", 3), b["reasons"]


REFUSED_JSON = {
    "smallRounds": ({"reviewer": {"adaptive": {"smallRounds": 0}}}, "reviewer.adaptive.smallRounds = 0"),
    "normalRounds": ({"reviewer": {"adaptive": {"normalRounds": -2}}}, "reviewer.adaptive.normalRounds = -2"),
    "highRiskRounds": ({"reviewer": {"adaptive": {"highRiskRounds": 0}}}, "reviewer.adaptive.highRiskRounds = 0"),
    "maxRounds": ({"reviewer": {"maxRounds": 0}}, "reviewer.maxRounds = 0"),
    "docsExtensions": ({"reviewer": {"adaptive": {"docsExtensions": [".md", ".py"]}}},
                       "reviewer.adaptive.docsExtensions' lists '.py'"),
}
REFUSED_TOML = {
    "small_rounds": ("[reviewer.adaptive]\nsmall_rounds = 0\n", "reviewer.adaptive.small_rounds = 0"),
    "flat small_rounds": ("[reviewer]\nsmall_rounds = 0\n", "reviewer.small_rounds = 0"),
    "high_risk_rounds": ("[reviewer.adaptive]\nhigh_risk_rounds = 0\n", "reviewer.adaptive.high_risk_rounds = 0"),
    "docs_extensions": ('[reviewer.adaptive]\ndocs_extensions = [".js"]\n',
                        "reviewer.adaptive.docs_extensions' lists '.js'"),
}


@pytest.mark.parametrize("case", sorted(REFUSED_JSON))
def test_a_v04_config_that_lets_code_skip_review_is_refused(tmp_path: Path, case: str) -> None:
    config, needle = REFUSED_JSON[case]
    repo = legacy_repo(tmp_path, config)
    (repo / "src/app.py").write_text("X = 2\n")
    for args in (("review-budget",), ("config", "show"), ("check",)):
        line = assert_clear_error(run_pilot(*args, cwd=repo), 1, ".autopilot/config.json", needle)
        assert "line " in line
    assert_clear_error(run_pilot("config", "migrate", cwd=repo), 1, needle)
    assert not (repo / ".gitpilot.toml").exists()


@pytest.mark.parametrize("case", sorted(REFUSED_TOML))
def test_a_toml_adaptive_block_that_lets_code_skip_review_is_refused(tmp_path: Path, case: str) -> None:
    config, needle = REFUSED_TOML[case]
    repo = make_repo(tmp_path / "repo", {"README.md": "# demo\n", ".gitpilot.toml": config})
    assert_clear_error(run_pilot("review-budget", cwd=repo), 1, ".gitpilot.toml: line 2:", needle)


def test_migrate_carries_every_setting_and_the_loader_takes_it_without_a_warning(tmp_path: Path) -> None:
    repo = legacy_repo(tmp_path, SEED_EXAMPLE)
    before = show(repo)
    res = run_pilot("config", "migrate", cwd=repo)
    assert res.returncode == 0, res.stderr
    after = show(repo)  # asserts no warning
    assert after["source"] == "toml"
    assert after["settings"] == before["settings"]
    assert after["checks"] == before["checks"]
    doc = tomllib.loads((repo / ".gitpilot.toml").read_text())
    assert doc["reviewer"]["adaptive"]["high_risk_paths"] == ["src/billing-core/**"]
    assert doc["check"][0] == {"name": "test -f README.md", "run": "test -f README.md"}


def test_migrate_keeps_a_v04_configs_three_rounds(tmp_path: Path) -> None:
    repo = legacy_repo(tmp_path, {"reviewer": {"adaptive": False}, "checks": ["true"]})
    before = show(repo)
    assert before["settings"]["reviewer.max_rounds"] == 3
    assert run_pilot("config", "migrate", cwd=repo).returncode == 0
    after = show(repo)
    assert after["settings"] == before["settings"]
    assert tomllib.loads((repo / ".gitpilot.toml").read_text())["reviewer"]["max_rounds"] == 3


def test_one_setting_written_two_ways_with_two_values_is_refused(tmp_path: Path) -> None:
    config = "[reviewer]\nsmall_rounds = 1\n\n[reviewer.adaptive]\nsmall_rounds = 2\n"
    repo = make_repo(tmp_path / "repo", {"README.md": "# demo\n", ".gitpilot.toml": config})
    assert_clear_error(run_pilot("config", "show", cwd=repo), 1, "reviewer.adaptive.small_rounds",
                       "reviewer.small_rounds", "the same setting")
