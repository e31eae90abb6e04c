"""Fake ``claude`` and ``codex`` executables for tests, and helpers to drive and inspect them.

``install(tmp_path, monkeypatch)`` puts both first on PATH (shims that call ``fake_agent.py``
with this interpreter) and returns a ``FakeAgents`` handle: ``calls()`` are the recorded
invocations (argv, stdin, cwd, env), ``state()`` the fake sessions and background jobs,
``rule(...)`` scripts the next answers from other samples. See README.md beside this file.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

HERE = Path(__file__).resolve().parent
SCRIPT = HERE / "fake_agent.py"


@dataclass
class FakeAgents:
    home: Path
    bindir: Path

    def calls(self, agent: str | None = None) -> list[dict[str, Any]]:
        path = self.home / "calls.jsonl"
        if not path.exists():
            return []
        entries = [json.loads(line) for line in path.read_text("utf-8").splitlines() if line.strip()]
        return [e for e in entries if agent is None or e["agent"] == agent]

    def argvs(self, agent: str | None = None, skip_probes: bool = True) -> list[list[str]]:
        """Recorded argvs; by default without the ``--help``/``--version`` feature probes."""
        out = []
        for e in self.calls(agent):
            argv = e["argv"]
            if skip_probes and ("--help" in argv or "--version" in argv):
                continue
            out.append(argv)
        return out

    def state(self) -> dict[str, Any]:
        path = self.home / "state.json"
        return json.loads(path.read_text("utf-8")) if path.exists() else {"sessions": {}, "jobs": []}

    def save_state(self, state: dict[str, Any]) -> None:
        (self.home / "state.json").write_text(json.dumps(state, indent=2, sort_keys=True), "utf-8")

    def add_session(self, session_id: str, cwd: str = "") -> None:
        """A conversation the fake CLI knows (as if an earlier session had run)."""
        state = self.state()
        state["sessions"][session_id] = {"cwd": cwd, "messages": [], "forked_from": None}
        self.save_state(state)

    def set_job_state(self, short_id: str, job_state: str) -> None:
        state = self.state()
        for job in state["jobs"]:
            if job["id"] == short_id:
                job["state"] = job_state
        self.save_state(state)

    def rule(
        self,
        agent: str,
        when: Sequence[str],
        *,
        sample: str | None = None,
        stdout: str = "",
        stderr: str = "",
        exit: int | None = None,
        times: int | None = None,
        replace: dict[str, str] | None = None,
    ) -> None:
        """Answer calls of ``agent`` whose argv holds every token of ``when`` with a sample."""
        path = self.home / "script.json"
        script = json.loads(path.read_text("utf-8")) if path.exists() else {"rules": []}
        rule: dict[str, Any] = {"agent": agent, "when": list(when)}
        if sample is not None:
            rule["sample"] = sample
        else:
            rule.update(stdout=stdout, stderr=stderr)
        if exit is not None:
            rule["exit"] = exit
        if times is not None:
            rule["times"] = times
        if replace:
            rule["replace"] = replace
        script["rules"].append(rule)
        path.write_text(json.dumps(script, indent=2), "utf-8")

    def remove(self, agent: str) -> None:
        """Take ``agent`` off PATH (as if it were not installed)."""
        (self.bindir / agent).unlink(missing_ok=True)


def install(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    agents: Sequence[str] = ("claude", "codex"),
    hide: Sequence[str] = (),
) -> FakeAgents:
    """Put fake agents first on PATH; ``hide`` drops help lines/commands (an older CLI)."""
    bindir = tmp_path / "fake-bin"
    home = tmp_path / "fake-home"
    bindir.mkdir(exist_ok=True)
    home.mkdir(exist_ok=True)
    for agent in agents:
        shim = bindir / agent
        shim.write_text(f'#!/bin/sh\nexec {sys.executable} {SCRIPT} {agent} "$@"\n')
        shim.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bindir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("FAKE_AGENT_HOME", str(home))
    if hide:
        monkeypatch.setenv("FAKE_AGENT_HIDE", ",".join(hide))
    return FakeAgents(home, bindir)
