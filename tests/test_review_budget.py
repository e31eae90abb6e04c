"""Review budgets on real diffs: docs only, small, normal, each high-risk rule, renames, binaries,
untracked files, staged and unstaged edits, the caps, adaptive off, v0.4 configs, base branches."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from conftest import git, make_repo, run_pilot

from gitpilot.errors import PilotError
from gitpilot.repo import Repo
from gitpilot.review.budget import Budget, compute_budget

BASE_FILES = {
    "README.md": "# demo\n\nA demo project.\n",
    "docs/guide.md": "# Guide\n\nUse it.\n",
    "src/app.py": "def main():\n    return 1\n",
    "src/util.py": "".join(f"def f{i}():\n    return {i}\n" for i in range(20)),
    ".github/workflows/ci.yml": "on: push\n",
}


def feature(tmp_path: Path, files: dict[str, str] | None = None, config: str | None = None) -> Path:
    """A repository on branch ``feature``, branched from ``main`` holding ``files`` (and a config)."""
    base = dict(files or BASE_FILES)
    if config is not None:
        base[".gitpilot.toml"] = config
    repo = make_repo(tmp_path / "repo", base)
    git(repo, "checkout", "-q", "-b", "feature")
    return repo


def write(repo: Path, path: str, text: str | bytes) -> None:
    f = repo / path
    f.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(text, bytes):
        f.write_bytes(text)
    else:
        f.write_text(text)


def commit(repo: Path, message: str = "change") -> None:
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", message)


def budget(repo: Path, base: str | None = None) -> Budget:
    return compute_budget(Repo.discover(repo), base)


def test_documentation_only_gets_no_review_round(tmp_path: Path) -> None:
    repo = feature(tmp_path)
    write(repo, "README.md", "# demo\n\nA demo project, now documented.\n")
    write(repo, "docs/new.rst", "Title\n=====\n")
    commit(repo)
    write(repo, "notes.txt", "plain notes\n")  # untracked documentation counts too
    b = budget(repo)
    assert (b.cls, b.rounds, b.files) == ("docs", 0, 3)
    assert any("documentation only" in r for r in b.reasons)


def test_nothing_changed_gets_no_round(tmp_path: Path) -> None:
    b = budget(feature(tmp_path))
    assert (b.cls, b.rounds, b.files) == ("empty", 0, 0)
    assert "nothing changed against main" in " ".join(b.reasons)


def test_small_low_risk_change_gets_one_round(tmp_path: Path) -> None:
    repo = feature(tmp_path)
    write(repo, "src/app.py", "def main():\n    return 2\n")
    commit(repo)
    b = budget(repo)
    assert (b.cls, b.rounds, b.changed_lines) == ("small", 1, 2)
    assert b.reasons[-1] == "budget: 1 round(s) (small_rounds 1)"


def test_more_than_three_files_is_normal(tmp_path: Path) -> None:
    repo = feature(tmp_path)
    for name in ("a", "b", "c", "d"):
        write(repo, f"src/{name}.py", "X = 1\n")
    commit(repo)
    b = budget(repo)
    assert (b.cls, b.rounds) == ("normal", 2)
    assert "not small: 4 files (more than 3)" in b.reasons


def test_more_than_eighty_changed_lines_is_normal(tmp_path: Path) -> None:
    repo = feature(tmp_path)
    write(repo, "src/big.py", "".join(f"V{i} = {i}\n" for i in range(81)))
    commit(repo)
    b = budget(repo)
    assert (b.cls, b.files, b.changed_lines) == ("normal", 1, 81)
    assert "not small: 81 changed lines (more than 80)" in b.reasons


def test_eighty_lines_in_three_files_is_still_small(tmp_path: Path) -> None:
    repo = feature(tmp_path)
    write(repo, "src/a.py", "".join(f"A{i} = {i}\n" for i in range(40)))
    write(repo, "src/b.py", "".join(f"B{i} = {i}\n" for i in range(40)))
    commit(repo)
    b = budget(repo)
    assert (b.cls, b.changed_lines) == ("small", 80)


def test_a_binary_file_is_never_small(tmp_path: Path) -> None:
    repo = feature(tmp_path)
    write(repo, "assets/logo.png", b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x01")
    commit(repo)
    b = budget(repo)
    assert (b.cls, b.rounds, b.binaries) == ("normal", 2, ("assets/logo.png",))
    assert "not small: binary file(s): assets/logo.png" in b.reasons


def test_commits_staged_unstaged_and_untracked_edits_all_count(tmp_path: Path) -> None:
    repo = feature(tmp_path, config="[reviewer]\nmax_rounds = 2\n")
    write(repo, "src/app.py", "def main():\n    return 2\n")
    commit(repo)
    write(repo, "src/staged.py", "S = 1\n")
    git(repo, "add", "src/staged.py")
    write(repo, "src/util.py", (repo / "src/util.py").read_text() + "X = 1\n")  # unstaged
    write(repo, "src/untracked.py", "U = 1\n")
    write(repo, ".gitignore", "*.log\n")
    write(repo, "debug.log", "password = hunter2\n")  # ignored: never part of the checked state
    b = budget(repo)
    assert b.files == 5  # app, staged, util, untracked, .gitignore
    assert b.cls == "high-risk"  # .gitignore
    assert all("debug.log" not in r for r in b.reasons)
    assert git(repo, "diff", "--cached", "--name-only").split() == ["src/staged.py"]  # index untouched


def test_untracked_code_file_is_reviewed(tmp_path: Path) -> None:
    repo = feature(tmp_path)
    write(repo, "src/new.py", "def g():\n    return 3\n")
    b = budget(repo)
    assert (b.cls, b.rounds, b.files) == ("small", 1, 1)


def test_ignored_files_are_not_part_of_the_change(tmp_path: Path) -> None:
    files = {**BASE_FILES, ".gitignore": "build/\n"}
    repo = feature(tmp_path, files)
    write(repo, "build/out.py", "import subprocess\n")
    b = budget(repo)
    assert (b.cls, b.rounds) == ("empty", 0)


def test_pure_rename_is_one_renamed_file_with_no_changed_lines(tmp_path: Path) -> None:
    repo = feature(tmp_path)
    git(repo, "mv", "src/util.py", "src/helpers.py")
    commit(repo)
    b = budget(repo)
    assert (b.cls, b.rounds, b.files, b.changed_lines) == ("small", 1, 1, 0)
    assert "(1 renamed)" in b.reasons[0]


def test_renamed_documentation_stays_documentation(tmp_path: Path) -> None:
    repo = feature(tmp_path)
    git(repo, "mv", "docs/guide.md", "docs/user-guide.md")
    commit(repo)
    assert (budget(repo).cls, budget(repo).rounds) == ("docs", 0)


@pytest.mark.parametrize(("old", "new"), [
    (".github/workflows/ci.yml", "ci-old.yml"),  # moved out of a high-risk place: the old name counts
    ("src/app.py", "src/auth/app.py"),  # moved into one: the new name counts
])
def test_a_rename_is_high_risk_by_either_name(tmp_path: Path, old: str, new: str) -> None:
    repo = feature(tmp_path)
    (repo / new).parent.mkdir(parents=True, exist_ok=True)
    git(repo, "mv", old, new)
    commit(repo)
    b = budget(repo)
    assert b.cls == "high-risk"
    assert any(f"{old} -> {new}" in r for r in b.high_risk)


HIGH_RISK_PATHS = [
    (".github/workflows/release.yml", "CI configuration"),
    (".gitlab-ci.yml", "CI configuration"),
    ("CLAUDE.md", "agent configuration"),
    ("services/api/AGENTS.md", "agent configuration"),
    (".claude/settings.json", "agent configuration"),
    (".codex/config.toml", "agent configuration"),
    (".autopilot/config.json", "agent configuration"),
    ("package.json", "dependency manifest"),
    ("poetry.lock", "dependency manifest"),
    ("requirements.txt", "dependency manifest"),
    ("go.sum", "dependency manifest"),
    ("src/auth/session.py", "auth, security, crypto or payment code"),
    ("lib/CryptoBox.java", "auth, security, crypto or payment code"),
    ("app/payments/refund.rb", "auth, security, crypto or payment code"),
    ("db/migrations/0002_add_users.py", "database migration"),
    (".gitignore", "git configuration"),
    ("SECURITY.md", "security policy"),
]


@pytest.mark.parametrize(("path", "rule"), HIGH_RISK_PATHS)
def test_each_high_risk_path_gets_max_rounds(tmp_path: Path, path: str, rule: str) -> None:
    repo = feature(tmp_path, config="[reviewer]\nmax_rounds = 3\n")
    write(repo, path, "x = 1\n")
    commit(repo)
    b = budget(repo)
    assert (b.cls, b.rounds) == ("high-risk", 3)
    assert any(r.startswith(f"high-risk: {path} is ") and rule in r for r in b.reasons), b.reasons


def test_changing_the_pilot_config_itself_is_high_risk(tmp_path: Path) -> None:
    repo = feature(tmp_path, config="[reviewer]\nmax_rounds = 3\n")
    write(repo, ".gitpilot.toml", "[reviewer]\nmax_rounds = 3\nsmall_rounds = 1\n")
    b = budget(repo)
    assert (b.cls, b.rounds) == ("high-risk", 3)


HIGH_RISK_LINES = [
    ('DB_PASSWORD = read_setting("db")\n', "a password"),
    ("import subprocess\n", "running a process (subprocess)"),
    ("const { exec } = require('child_process');\n", "running a process (child process)"),
    ("el.innerHTML = html;\n", "HTML injection"),
    ("result = eval(expression)\n", "dynamic code execution (eval)"),
    ('q = "CREATE TABLE users (id int)"\n', "SQL DDL (CREATE TABLE)"),
    ("c = Cipher(algorithms.AES(k), modes.GCM(iv))\n", "cryptography (cipher)"),
    ("charge = stripe.Charge.create(amount=1)\n", "payments"),
    ('TOKEN = "ghp_' + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8" + '"\n',
     "a credential in a known token format"),
]


@pytest.mark.parametrize(("line", "rule"), HIGH_RISK_LINES)
def test_a_changed_code_line_with_a_sensitive_keyword_is_high_risk(tmp_path: Path, line: str,
                                                                   rule: str) -> None:
    repo = feature(tmp_path)
    write(repo, "src/app.py", "def main():\n    return 1\n" + line)
    b = budget(repo)
    assert (b.cls, b.rounds) == ("high-risk", 2)
    assert f"high-risk: src/app.py:3 changes a line mentioning {rule}" in " ".join(b.reasons), b.reasons
    assert line.strip() not in " ".join(b.reasons)  # reasons name the rule, never the line (or a secret)


def test_a_removed_line_counts_like_an_added_one(tmp_path: Path) -> None:
    files = {**BASE_FILES, "src/run.py": "import subprocess\nX = 1\n"}
    repo = feature(tmp_path, files)
    write(repo, "src/run.py", "X = 1\n")
    b = budget(repo)
    assert b.cls == "high-risk"
    assert "src/run.py:1 changes a line mentioning running a process" in " ".join(b.reasons)


def test_keywords_in_documentation_do_not_make_it_high_risk(tmp_path: Path) -> None:
    repo = feature(tmp_path)
    write(repo, "docs/guide.md", "# Guide\n\nSet the password with subprocess and eval(x).\n")
    b = budget(repo)
    assert (b.cls, b.rounds) == ("docs", 0)


def test_ordinary_code_that_only_looks_alike_stays_small(tmp_path: Path) -> None:
    repo = feature(tmp_path)
    write(repo, "src/app.py", "def main():\n    model.eval()\n    author = tokenize(text)\n    return 1\n")
    b = budget(repo)
    assert (b.cls, b.rounds) == ("small", 1), b.reasons


def test_configured_high_risk_paths_and_keywords(tmp_path: Path) -> None:
    config = '[reviewer]\nhigh_risk_paths = ["infra/"]\nhigh_risk_keywords = ["feature_flag"]\n'
    repo = feature(tmp_path, config=config)
    write(repo, "infra/main.tf", "x = 1\n")
    b = budget(repo)
    assert b.cls == "high-risk"
    assert "infra/main.tf is a configured high-risk path" in " ".join(b.reasons)
    write(repo, "infra/main.tf", "")
    (repo / "infra/main.tf").unlink()
    write(repo, "src/app.py", "def main():\n    return FEATURE_FLAG\n")
    b = budget(repo)
    assert b.cls == "high-risk"
    assert "a configured high-risk keyword (feature_flag)" in " ".join(b.reasons)


def test_max_rounds_caps_every_class(tmp_path: Path) -> None:
    config = "[reviewer]\nmax_rounds = 1\nsmall_rounds = 3\nnormal_rounds = 4\nhigh_risk_rounds = 5\n"
    repo = feature(tmp_path, config=config)
    write(repo, "src/app.py", "def main():\n    return 2\n")
    b = budget(repo)
    assert (b.cls, b.rounds) == ("small", 1)
    assert b.reasons[-1] == "budget: 1 round(s) (small_rounds 3, capped by max_rounds 1)"
    write(repo, "src/app.py", "import subprocess\n")
    assert (budget(repo).cls, budget(repo).rounds) == ("high-risk", 1)


def test_class_rounds_below_max_are_used_as_configured(tmp_path: Path) -> None:
    config = "[reviewer]\nmax_rounds = 5\nnormal_rounds = 3\nhigh_risk_rounds = 4\n"
    repo = feature(tmp_path, config=config)
    for name in ("a", "b", "c", "d"):
        write(repo, f"src/{name}.py", "X = 1\n")
    assert (budget(repo).cls, budget(repo).rounds) == ("normal", 3)
    write(repo, "package.json", "{}\n")
    assert (budget(repo).cls, budget(repo).rounds) == ("high-risk", 4)


def test_adaptive_off_keeps_a_fixed_max_rounds(tmp_path: Path) -> None:
    repo = feature(tmp_path, config="[reviewer]\nadaptive = false\nmax_rounds = 3\n")
    write(repo, "README.md", "# demo\n\nOnly docs.\n")
    b = budget(repo)
    assert (b.cls, b.rounds) == ("docs", 3)
    assert "adaptive review is off" in b.reasons[-1]


def test_leanloop_disabled_restores_fixed_rounds(tmp_path: Path) -> None:
    repo = feature(tmp_path, config="[leanloop]\nenabled = false\n")
    write(repo, "src/app.py", "def main():\n    return 2\n")
    b = budget(repo)
    assert (b.cls, b.rounds, b.adaptive) == ("small", 2, False)


def test_a_v04_config_defaults_to_three_rounds(tmp_path: Path) -> None:
    files = {**BASE_FILES, ".autopilot/config.json": json.dumps({"checks": []})}
    repo = feature(tmp_path, files)
    write(repo, "src/app.py", "import subprocess\n")
    b = budget(repo)
    assert (b.cls, b.rounds, b.max_rounds) == ("high-risk", 3, 3)
    write(repo, "src/app.py", "def main():\n    return 2\n")
    assert (budget(repo).cls, budget(repo).rounds) == ("small", 1)


def test_a_new_config_defaults_to_two_rounds(tmp_path: Path) -> None:
    repo = feature(tmp_path, config="[leanloop]\nenabled = true\n")
    write(repo, "src/app.py", "import subprocess\n")
    assert (budget(repo).rounds, budget(repo).max_rounds) == (2, 2)


# -- the base branch -------------------------------------------------------------------------
def test_the_diff_starts_at_the_merge_base_not_the_base_tip(tmp_path: Path) -> None:
    repo = feature(tmp_path)
    write(repo, "src/app.py", "def main():\n    return 2\n")
    commit(repo)
    git(repo, "checkout", "-q", "main")
    for name in ("x", "y", "z", "w"):  # the base moves on: none of this is the feature's change
        write(repo, f"src/{name}.py", "import subprocess\n")
    commit(repo, "main moves on")
    git(repo, "checkout", "-q", "feature")
    b = budget(repo)
    assert (b.cls, b.files) == ("small", 1)
    assert b.merge_base == git(repo, "merge-base", "main", "feature").strip()


def test_base_option_and_base_branch_setting(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", {"a.py": "A = 1\n"})
    git(repo, "branch", "-m", "main", "trunk")
    git(repo, "checkout", "-q", "-b", "feature")
    write(repo, "a.py", "A = 2\n")
    with pytest.raises(PilotError, match="no base branch found"):
        budget(repo)
    assert budget(repo, base="trunk").base == "trunk"
    with pytest.raises(PilotError, match="no base branch 'nope'"):
        budget(repo, base="nope")
    write(repo, ".gitpilot.toml", 'base_branch = "trunk"\n')
    assert budget(repo).base == "trunk"


def test_origin_head_is_the_default_base(tmp_path: Path) -> None:
    upstream = make_repo(tmp_path / "upstream", {"a.py": "A = 1\n"})
    git(upstream, "branch", "-m", "main", "develop")
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", str(upstream), str(clone))
    git(clone, "checkout", "-q", "-b", "feature")
    write(clone, "a.py", "A = 2\n")
    b = budget(clone)
    assert (b.base, b.cls) == ("origin/develop", "small")


# -- the command -------------------------------------------------------------------------------
def test_review_budget_command_text_and_json_are_deterministic(tmp_path: Path) -> None:
    repo = feature(tmp_path)
    write(repo, "src/app.py", "import subprocess\n")
    write(repo, "package.json", "{}\n")
    write(repo, "docs/guide.md", "# Guide\n\nchanged\n")
    runs = [run_pilot("review-budget", "--json", cwd=repo, env={"PYTHONHASHSEED": seed})
            for seed in ("1", "2")]
    assert runs[0].returncode == 0, runs[0].stderr
    assert runs[0].stdout == runs[1].stdout
    data = json.loads(runs[0].stdout)
    assert (data["class"], data["rounds"], data["base"]) == ("high-risk", 2, "main")
    assert data["high_risk"] == [
        "high-risk: package.json is a dependency manifest or lockfile",
        "high-risk: src/app.py:1 changes a line mentioning running a process (subprocess)"]
    text = run_pilot("review-budget", cwd=repo)
    assert text.stdout.splitlines()[0].startswith("review budget: 2 round(s) · high-risk · against main")
    assert "  high-risk: package.json is a dependency manifest or lockfile" in text.stdout.splitlines()


def test_review_budget_base_option_through_git(tmp_path: Path, pilot_on_path: Path) -> None:
    repo = feature(tmp_path)
    write(repo, "README.md", "# changed\n")
    proc = git(repo, "pilot", "review-budget", "--base", "main", "--json")
    assert json.loads(proc)["class"] == "docs"
    assert os.environ["PATH"].startswith(str(pilot_on_path.parent))
