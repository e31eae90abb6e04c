"""Running ``git pilot capsule`` without click: the task's source, the build, the rendering; and
``build_capsule``, the one way to a capsule (stamp, then the warm check, then a build).

Kept free of click so ``cli._fast_path`` can serve a warm capsule with the lightest imports.
"""

from __future__ import annotations

import sys

from gitpilot.errors import UsageError

# The agents a capsule is made for (the adapters' names): only Claude Code loads its memory itself.
AGENTS = ("claude", "codex", "copilot", "pi", "grok")

TYPE_CHECKING = False
if TYPE_CHECKING:  # json, pathlib and typing cost more than a warm capsule itself
    from pathlib import Path
    from typing import Any

    from gitpilot.context.result import CapsuleResult
    from gitpilot.repo import Repo


def read_task(task_file: str | None, task: str | None, *, stdin: bool = True, text_name: str = "--task") -> str:
    """The task text from exactly one of ``--task-file`` and the text option (``text_name``), or,
    with ``stdin``, from standard input when it is not a terminal. One reader for every command
    that takes a task (``capsule``, ``run``): the same errors, exit 2, for the same mistakes.
    """
    if task_file is not None and task is not None:
        raise UsageError(f"give {text_name} or --task-file, not both")
    if task is not None:
        text = task
    elif task_file is not None:
        if task_file == "-":
            text = _decode(sys.stdin.buffer.read(), "the task on stdin")
        else:
            try:
                with open(task_file, "rb") as fh:
                    data = fh.read()
            except FileNotFoundError as exc:
                raise UsageError(f"no such task file: {task_file}") from exc
            except IsADirectoryError as exc:
                raise UsageError(f"task file is a directory: {task_file}") from exc
            except OSError as exc:
                raise UsageError(f"cannot read the task file {task_file}: {exc.strerror or exc}") from exc
            text = _decode(data, f"task file {task_file}")
    elif stdin and not sys.stdin.isatty():
        text = _decode(sys.stdin.buffer.read(), "the task on stdin")
    else:
        more = ", or the task on stdin" if stdin else ""
        raise UsageError(f"no task: give {text_name}, --task-file F{more}")
    if not text.strip():
        raise UsageError("the task is empty")
    return text


def _decode(data: bytes, what: str) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise UsageError(f"{what} is not UTF-8 (byte {exc.start})") from exc


def run(cwd: str | Path, task_text: str, *, print_: bool, as_json: bool, agent: str | None = None) -> int:
    from gitpilot.context.stamp import express
    from gitpilot.output import out, write

    hit = express(cwd, task_text, agent or "")
    if hit is not None and not as_json:
        if print_:
            write(hit.body)
        else:
            out(_line("reused", len(hit.body), int(hit.stamp["baseline_bytes"]), str(hit.md_path)))
        return 0
    result = _full(cwd, task_text, hit, agent)
    if print_:
        write(result.text.encode("utf-8"))
        return 0
    sizes = {
        "task_id": result.task_id,
        "path": str(result.path) if result.path else None,
        "manifest_path": str(result.json_path) if result.json_path else None,
        "reused": result.reused,
        "baseline_bytes": result.baseline_bytes,
        "capsule_bytes": result.capsule_bytes,
        "reduction": _reduction(result.baseline_bytes, result.capsule_bytes),
    }
    if as_json:
        import json

        out(json.dumps({**sizes, "manifest": result.manifest}, sort_keys=True, ensure_ascii=False))
        return 0
    out(
        _line(
            "reused" if result.reused else "built",
            result.capsule_bytes,
            result.baseline_bytes,
            str(result.path),
        )
    )
    return 0


def build_capsule(repo: Repo, task_text: str, *, use_cache: bool = True, agent: str | None = None) -> CapsuleResult:
    """The capsule for ``task_text`` in ``repo`` (for ``agent``, default the configured one): served
    by its stamp, else reused when its fingerprint matches, else built. Every caller goes this way."""
    if use_cache and repo.root is not None:
        from gitpilot.context.stamp import express

        hit = express(repo.root, task_text, agent or "")
        if hit is not None:
            from gitpilot.context.result import result_from_hit

            return result_from_hit(hit)
    return _reuse_or_build(repo, task_text, use_cache=use_cache, agent=agent)


def _reuse_or_build(repo: Repo, task_text: str, *, use_cache: bool = True, agent: str | None = None) -> CapsuleResult:
    """What the stamp did not serve: the stored capsule when nothing it depends on changed, else a
    fresh build (which alone imports the assembly and its parsers)."""
    import gc

    # Tens of thousands of small objects (the index's entries, the sources, the maps...) and no
    # cycles: the cyclic collector only costs time here (~10-17 ms a new task on vercel/ai).
    enabled = gc.isenabled()
    gc.disable()
    try:
        from gitpilot.context import warm

        state = warm.prepare(repo, task_text, agent)
        if use_cache:
            reused = warm.try_reuse(repo, state)
            if reused is not None:
                return reused
        from gitpilot.context.capsule import build_from_state

        return build_from_state(repo, state, use_cache=use_cache)
    finally:
        if enabled:
            gc.enable()


def _full(cwd: str | Path, task_text: str, hit: Any, agent: str | None = None) -> CapsuleResult:
    """``build_capsule`` with the stamp already asked (``hit``), for a cwd not yet opened as a Repo."""
    if hit is not None:
        from gitpilot.context.result import result_from_hit

        return result_from_hit(hit)
    from pathlib import Path

    from gitpilot.repo import Repo

    return _reuse_or_build(Repo.discover(Path(cwd)), task_text, agent=agent)


def _line(state: str, capsule: int, baseline: int, path: str) -> str:
    if baseline and capsule > baseline:
        return (f"capsule {state}: {capsule} bytes → {path}\n"
                f"note: this capsule is larger than reading every context file ({baseline} bytes): "
                "the context is small; the capsule adds the task, the configuration and the source of each excerpt")
    change = _percent(baseline, capsule)
    return f"capsule {state}: {capsule} bytes, baseline {baseline} bytes ({change}) → {path}"


def _percent(baseline: int, capsule: int) -> str:
    if not baseline:
        return "no baseline"
    change = 1 - capsule / baseline
    return f"{change:.0%} fewer" if change >= 0 else f"{-change:.0%} more"


def _reduction(baseline: int, capsule: int) -> float:
    return round(1 - capsule / baseline, 4) if baseline else 0.0


def fast(argv: list[str]) -> int | None:
    """The command without click, for ``cli._fast_path``: None when argv needs the full parser."""
    args = list(argv)
    task: str | None = None
    task_file: str | None = None
    agent: str | None = None
    flags = {"--print": False, "--json": False}
    while args:
        a = args.pop(0)
        if a in flags:
            flags[a] = True
        elif a in ("--task", "--task-file", "--agent") and args:
            if a == "--task":
                task = args.pop(0)
            elif a == "--agent":
                agent = args.pop(0)
            else:
                task_file = args.pop(0)
        elif a.startswith(("--task=", "--task-file=", "--agent=")):
            key, _, val = a.partition("=")
            if key == "--task":
                task = val
            elif key == "--agent":
                agent = val
            else:
                task_file = val
        else:
            return None
    import os

    if agent is not None and agent not in AGENTS:
        return None  # the full parser says which agents there are
    return run(os.getcwd(), read_task(task_file, task), print_=flags["--print"], as_json=flags["--json"],
               agent=agent)
