"""``git pilot optimize enable codex`` with the *real* ``codex`` against the loopback mock: the
installed hooks run, the detector reads Codex's payloads and rollout, and the redirect reaches
the model beside the third identical failure.

Skipped unless a real Codex CLI is on PATH (``npm install @openai/codex@0.171.0``). The hooks are
trusted the way a user's approval in Codex's ``/hooks`` records it: the ``currentHash`` that
``codex app-server`` lists (``hooks/list``) written under ``[hooks.state]`` of the test's own
``$CODEX_HOME/config.toml``.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import make_repo, run_pilot
from fake_agents.mock_openai import MockOpenAI, Shell

pytestmark = pytest.mark.skipif(shutil.which("codex") is None, reason="the real codex CLI is not installed")

CHECK_SH = ('grep -q "SPEED = 12000" speed.py || { echo "speed.py:1: AssertionError: expected SPEED = 12000, '
            'got 9000"; exit 1; }\necho "1 passed"\n')


@pytest.fixture
def api(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[MockOpenAI]:
    with MockOpenAI(reply="done") as mock:
        # a model name Codex offers its shell tool to (it gives an unknown custom model none)
        mock.use_for_codex(tmp_path / "codex-home", monkeypatch, head='model = "gpt-5.4"\n')
        yield mock
    assert mock.foreign == [], f"codex tried to reach hosts other than the loopback mock: {mock.foreign}"


def trust_project_and_hooks(home: Path, repo: Path) -> int:
    """What a user does in Codex: trust the project, approve its hooks. Returns how many."""
    config = home / "config.toml"
    config.write_text(config.read_text() + f'\n[projects."{repo}"]\ntrust_level = "trusted"\n')
    proc = subprocess.Popen(["codex", "app-server"], cwd=repo, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL)
    assert proc.stdin is not None and proc.stdout is not None

    def ask(rid: int, method: str, params: dict[str, object]) -> dict[str, object]:
        assert proc.stdin is not None and proc.stdout is not None
        proc.stdin.write((json.dumps({"jsonrpc": "2.0", "id": rid, "method": method, "params": params}) + "\n")
                         .encode())
        proc.stdin.flush()
        while True:
            reply = json.loads(proc.stdout.readline())
            if reply.get("id") == rid:
                return dict(reply)

    try:
        ask(1, "initialize", {"clientInfo": {"name": "git-pilot-test", "version": "0"}})
        proc.stdin.write(b'{"jsonrpc": "2.0", "method": "initialized"}\n')
        hooks = ask(2, "hooks/list", {"cwds": [str(repo)]})["result"]["data"][0]["hooks"]  # type: ignore[index]
    finally:
        proc.kill()
        proc.wait()
    ours = [h for h in hooks if h["command"].endswith("-m gitpilot hook codex")]
    text = config.read_text()
    text += "".join(f'\n[hooks.state."{h["key"]}"]\ntrusted_hash = "{h["currentHash"]}"\n' for h in ours)
    config.write_text(text)
    return len(ours)


def test_real_codex_runs_the_detector_and_the_redirect_reaches_the_model(
    tmp_path: Path, api: MockOpenAI
) -> None:
    repo = make_repo(tmp_path / "repo", {".gitpilot.toml": '[[check]]\nname = "unit"\nrun = "sh check.sh"\n',
                                         "check.sh": CHECK_SH, "speed.py": "SPEED = 9000\n"})
    assert run_pilot("optimize", "enable", "codex", cwd=repo).returncode == 0
    assert trust_project_and_hooks(tmp_path / "codex-home", repo) == 4
    api.script = [Shell("sh check.sh"), Shell("sh check.sh"), Shell("sh check.sh"), "I keep failing."]
    proc = subprocess.run(["codex", "exec", "--json", "Raise the widget speed cap to 12000"], cwd=repo,
                          stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=180)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "hook returned invalid" not in proc.stdout + proc.stderr
    requests = [json.dumps(body) for body in api.model_requests()]
    assert len(requests) == 4, proc.stdout + proc.stderr
    redirect = "has now failed 3 times in a row in this turn with the same error"
    assert [redirect in r for r in requests] == [False, False, False, True]  # beside the third failure only
