"""Config values are validated, not only typed: numbers are finite and positive (or at least 0
where 0 means something), and a table given a scalar (or a scalar given a table) is a type
error naming file, line and key. Through the real command line, on real repositories."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import make_repo, run_pilot
from test_qa_support import Snapshot, assert_clear_error

CHECK = '\n[[check]]\nname = "ok"\nrun = "touch ran.txt"\n'

BAD_TOML: dict[str, tuple[str, tuple[str, ...]]] = {
    "negative timeout": ("[leanloop.checks]\ntimeout_minutes = -1\n" + CHECK,
                         ("line 2:", "leanloop.checks.timeout_minutes", "positive number, not -1")),
    "nan timeout": ("[leanloop.checks]\ntimeout_minutes = nan\n" + CHECK,
                    ("line 2:", "leanloop.checks.timeout_minutes", "finite number, not nan")),
    "infinite timeout": ("[leanloop.checks]\ntimeout_minutes = inf\n" + CHECK,
                         ("line 2:", "leanloop.checks.timeout_minutes", "finite number, not inf")),
    "zero excerpt lines": ("[leanloop.checks]\nfailure_excerpt_lines = 0\n" + CHECK,
                           ("line 2:", "leanloop.checks.failure_excerpt_lines", "positive whole number")),
    "negative keep_runs": ("[leanloop.checks]\nkeep_runs = -3\n" + CHECK,
                           ("line 2:", "leanloop.checks.keep_runs", "positive whole number, not -3")),
    "negative grace": ("[quota]\ngrace_minutes = -5\n" + CHECK, ("line 2:", "quota.grace_minutes", "negative")),
    "check timeout": (CHECK + "timeout_minutes = 0\n",
                      ("line 5:", "check.timeout_minutes", "positive number, not 0", "check 1")),
    "table given a scalar": ("leanloop = 5\n" + CHECK, ("line 1:", "key 'leanloop' must be a table, not a number")),
    "nested table given a scalar": ('[leanloop]\nchecks = "fast"\n' + CHECK,
                                    ("line 2:", "key 'leanloop.checks' must be a table, not a string")),
    "scalar given a table": ("[leanloop.enabled]\nreally = true\n" + CHECK,
                             ("line 1:", "key 'leanloop.enabled' must be true or false, not a table")),
    "dotted key given a scalar": ("reviewer.adaptive = 5\n" + CHECK,
                                  ("line 1:", "key 'reviewer.adaptive' must be true, false or a table")),
}


@pytest.mark.parametrize("case", sorted(BAD_TOML))
def test_a_bad_value_stops_with_file_line_and_key(tmp_path: Path, case: str) -> None:
    text, needles = BAD_TOML[case]
    repo = make_repo(tmp_path / "repo", {"README.md": "# r\n", ".gitpilot.toml": text})
    before = Snapshot.take(repo)
    for args in (("check",), ("config", "show"), ("review-budget",)):
        assert_clear_error(run_pilot(*args, cwd=repo), 1, str(repo / ".gitpilot.toml"), *needles)
    assert not (repo / "ran.txt").exists()  # the check never ran under a broken setting
    before.assert_unchanged(repo)


def test_the_same_checks_run_once_the_value_is_fixed(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", {"README.md": "# r\n",
                                         ".gitpilot.toml": "[leanloop.checks]\ntimeout_minutes = 0.5\n" + CHECK})
    res = run_pilot("check", cwd=repo)
    assert res.returncode == 0, res.stderr
    assert (repo / "ran.txt").exists()


def test_zero_is_accepted_where_it_means_something(tmp_path: Path) -> None:
    config = ("[quota]\ngrace_minutes = 0\n[reviewer.adaptive]\ndocs_only_rounds = 0\nsmall_max_files = 0\n"
              + CHECK)
    repo = make_repo(tmp_path / "repo", {"README.md": "# r\n", ".gitpilot.toml": config})
    res = run_pilot("config", "show", "--json", cwd=repo)
    assert res.returncode == 0 and res.stderr == "", res.stderr
    settings = json.loads(res.stdout)["settings"]
    assert (settings["quota.grace_minutes"], settings["reviewer.adaptive.small_max_files"]) == (0, 0)


BAD_JSON: dict[str, tuple[object, tuple[str, ...]]] = {
    "negative timeout": ({"leanloop": {"checks": {"timeoutMinutes": -1}}},
                         ("line 4:", "leanloop.checks.timeoutMinutes", "positive number, not -1")),
    "table given a scalar": ({"checks": [], "leanloop": 5}, ("line 3:", "key 'leanloop' must be a table")),
    "check timeout": ({"checks": [{"name": "u", "command": "true", "timeoutMinutes": -2}]},
                      ("line 6:", "check.timeoutMinutes", "positive number, not -2", "check 1")),
}


@pytest.mark.parametrize("case", sorted(BAD_JSON))
def test_a_bad_v04_value_stops_with_file_line_and_key(tmp_path: Path, case: str) -> None:
    config, needles = BAD_JSON[case]
    repo = make_repo(tmp_path / "repo", {"README.md": "# r\n",
                                         ".autopilot/config.json": json.dumps(config, indent=2)})
    for args in (("check",), ("config", "show"), ("config", "migrate")):
        assert_clear_error(run_pilot(*args, cwd=repo), 1, ".autopilot/config.json", *needles)
    assert not (repo / ".gitpilot.toml").exists()


def test_the_agent_hooks_defaults_are_the_schemas() -> None:
    # The hook cannot import gitpilot.config (its hot path), so it carries the defaults of the
    # keys it reads: they must be the schema's, type and all (True == 1 in Python).
    from gitpilot import config
    from gitpilot.optimizer import loop

    kinds = {"bool": bool, "int": int}
    assert loop.HOOK_DEFAULTS == {key: config.SCHEMA[key][1] for key in loop.HOOK_DEFAULTS}
    assert {key: type(value) for key, value in loop.HOOK_DEFAULTS.items()} == \
        {key: kinds[config.SCHEMA[key][0]] for key in loop.HOOK_DEFAULTS}
