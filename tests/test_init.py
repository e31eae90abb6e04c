"""git pilot init: a commented template whose documented defaults are the real ones."""

from __future__ import annotations

import json
import re
import tomllib
from pathlib import Path

from conftest import make_repo, run_pilot

from gitpilot.commands.init import render_template
from gitpilot.config import SCHEMA


def test_template_documents_every_key_with_its_real_default() -> None:
    text = render_template([])
    documented: dict[str, object] = {}
    section = ""
    for line in text.splitlines():
        if "[[check]]" in line:
            break  # the check tables come last
        if m := re.match(r"^\[([a-z.]+)\]$", line):
            section = m.group(1) + "."
        elif m := re.match(r"^# ([a-z_]+) = (.+?)(\s{2,}#.*)?$", line):
            documented[section + m.group(1)] = tomllib.loads(f"v = {m.group(2)}")["v"]
    assert sorted(documented) == sorted(SCHEMA)
    for key, (_, default) in SCHEMA.items():
        assert documented[key] == default, key


def test_init_infers_checks_and_refuses_to_overwrite(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "r", {
        "package.json": json.dumps({"scripts": {"test": "jest"}}),
        "Cargo.toml": "[package]\nname='x'\n",
        "go.mod": "module x\n",
        "Makefile": "build:\n\ttrue\ntest:\n\ttrue\n",
        "tests/conftest.py": "",
    })
    res = run_pilot("init", "--no-hooks", cwd=repo)
    assert res.returncode == 0, res.stderr
    cfg = tomllib.loads((repo / ".gitpilot.toml").read_text())
    # issue 16: one check per kind, from the most trusted source that states one (the Makefile's
    # target over package.json's script); Cargo, Go and pytest are guessed only when nothing is stated
    assert [c["run"] for c in cfg["check"]] == ["make test"]
    again = run_pilot("init", "--no-hooks", cwd=repo)
    assert again.returncode == 1 and "exists already; not overwriting" in again.stderr
    show = run_pilot("config", "show", cwd=repo)
    assert show.returncode == 0 and show.stderr == ""


def test_init_without_known_runners_writes_a_commented_example(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "r")
    assert run_pilot("init", "--no-hooks", cwd=repo).returncode == 0
    text = (repo / ".gitpilot.toml").read_text()
    assert "# [[check]]" in text and tomllib.loads(text).get("check") is None
