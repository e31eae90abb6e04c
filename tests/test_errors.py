"""Bad input gets one clear line and the exit code of DESIGN.md, and loses nothing."""

from __future__ import annotations

from pathlib import Path

from conftest import git, make_repo, run_pilot


def test_not_a_repository(tmp_path: Path) -> None:
    d = tmp_path / "plain"
    d.mkdir()
    res = run_pilot("check", cwd=d, env={"GIT_CEILING_DIRECTORIES": str(tmp_path)})
    assert res.returncode == 1
    assert res.stderr.strip() == f"git pilot: not a git repository: {d}"
    assert "Traceback" not in res.stderr


def test_broken_toml_names_file_line_and_column(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "r", {".gitpilot.toml": "[[check]]\nname = \"a\"\nrun = \n"})
    res = run_pilot("check", cwd=repo)
    assert res.returncode == 1
    assert res.stderr.startswith(f"git pilot: {repo}/.gitpilot.toml:3:7: invalid TOML")
    assert len(res.stderr.strip().splitlines()) == 1


def test_wrong_type_names_file_line_key_and_expectation(tmp_path: Path) -> None:
    cfg = '[leanloop.checks]\nkeep_runs = "ten"\n[[check]]\nname = "a"\nrun = "true"\n'
    repo = make_repo(tmp_path / "r", {".gitpilot.toml": cfg})
    res = run_pilot("check", cwd=repo)
    assert res.returncode == 1
    assert res.stderr.strip() == (f"git pilot: {repo}/.gitpilot.toml: line 2: key 'leanloop.checks.keep_runs' "
                                  "must be a whole number, not a string")


def test_unknown_keys_warn_and_still_run(tmp_path: Path) -> None:
    cfg = '[leanloop.checks]\nkeep_rns = 3\n[[check]]\nname = "a"\nrun = "true"\nflavour = 1\n'
    repo = make_repo(tmp_path / "r", {".gitpilot.toml": cfg})
    res = run_pilot("check", cwd=repo)
    assert res.returncode == 0
    assert "unknown key 'leanloop.checks.keep_rns'" in res.stderr
    assert "unknown key 'check.flavour'" in res.stderr


def test_v04_json_config_is_read(tmp_path: Path) -> None:
    legacy = '{"checks": [{"name": "t", "command": "echo legacy-ran"}], "leanloop": {"checks": {"failureExcerptLines": 5}}}'
    repo = make_repo(tmp_path / "r", {".autopilot/config.json": legacy})
    res = run_pilot("check", cwd=repo)
    assert res.returncode == 0 and res.stdout.startswith("PASS echo legacy-ran")
    show = run_pilot("config", "show", "--json", cwd=repo)
    assert '"leanloop.checks.failure_excerpt_lines": 5' in show.stdout and '"source": "v0.4"' in show.stdout
    mig = run_pilot("config", "migrate", cwd=repo)
    assert mig.returncode == 0
    text = (repo / ".gitpilot.toml").read_text()
    assert 'run = "echo legacy-ran"' in text and "failure_excerpt_lines = 5" in text
    assert run_pilot("check", cwd=repo).stdout.startswith("PASS echo legacy-ran")


def test_broken_json_config(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "r", {".autopilot/config.json": '{"checks": [\n'})
    res = run_pilot("check", cwd=repo)
    assert res.returncode == 1 and "config.json:2:1: invalid JSON" in res.stderr


def test_no_checks_configured(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "r")
    res = run_pilot("check", cwd=repo)
    assert res.returncode == 1 and "no checks configured" in res.stderr


def test_usage_error_exit_2(tmp_path: Path) -> None:
    res = run_pilot("check", "--no-such-flag", cwd=tmp_path)
    assert res.returncode == 2 and "No such option" in res.stderr
    res = run_pilot("no-such-command", cwd=tmp_path)
    assert res.returncode == 2


def test_sha256_repository_is_refused_by_name(tmp_path: Path) -> None:
    d = tmp_path / "s"
    d.mkdir()
    git(d, "init", "-q", "--object-format=sha256")
    res = run_pilot("check", cwd=d)
    assert res.returncode == 1
    assert "objectFormat=sha256" in res.stderr and "Traceback" not in res.stderr


def test_unknown_extension_is_refused_by_name(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "r")
    git(repo, "config", "core.repositoryformatversion", "1")
    git(repo, "config", "extensions.refStorage", "reftable")
    res = run_pilot("check", cwd=repo)
    assert res.returncode == 1
    assert "refstorage" in res.stderr.lower() and "Traceback" not in res.stderr


def test_version_and_help(tmp_path: Path) -> None:
    res = run_pilot("--version", cwd=tmp_path)
    assert res.returncode == 0 and res.stdout.startswith("git pilot 0.")
    res = run_pilot("--help", cwd=tmp_path)
    assert res.returncode == 0 and "check" in res.stdout
    res = run_pilot("help", "check", cwd=tmp_path)
    assert res.returncode == 0 and "--only" in res.stdout


def test_the_config_cache_follows_every_edit_and_never_keeps_a_broken_file(tmp_path: Path) -> None:
    cfg = '[[check]]\nname = "a"\nrun = "echo one"\n'
    repo = make_repo(tmp_path / "r", {".gitpilot.toml": cfg})
    assert run_pilot("check", cwd=repo).stdout.startswith("PASS echo one")
    assert (repo / ".git" / "pilot" / "config.cache").is_file()
    (repo / ".gitpilot.toml").write_text(cfg.replace("echo one", "echo two"))  # same size, same second
    assert run_pilot("check", cwd=repo).stdout.startswith("PASS echo two")
    (repo / ".gitpilot.toml").write_text(cfg.replace('"a"', '"a"\nflavour = "x"'))
    res = run_pilot("check", cwd=repo)
    assert "unknown key 'check.flavour'" in res.stderr  # warnings come from validation, every time
    res = run_pilot("check", cwd=repo)
    assert "unknown key 'check.flavour'" in res.stderr
    (repo / ".gitpilot.toml").write_text("[[check]\n")
    assert run_pilot("check", cwd=repo).returncode == 1
