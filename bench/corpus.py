"""The capsule on real repositories: the development corpus, scored as a user's capsule is built.

``python -m bench corpus [--mirror-root DIR] [--work DIR] [--only OWNER/NAME] [--json] [-v]``
``python -m bench corpus --speed OWNER/NAME [--rounds N] [--pilot CMD] [--json]``

``bench/corpus/cases.toml`` holds 36 tasks written like real issues over 12 public repositories
at pinned commits, each with the Markdown sections a competent engineer must read to do it. The
repositories are bare snapshots laid out as ``DIR/<owner>+<name>/repo`` (``--mirror-root``, or
``GIT_PILOT_CORPUS_MIRRORS``, default ``../.mirror`` beside the checkout); without them the
benchmark says so and scores nothing.

For each repository the pinned commit is checked out once into ``--work`` (files absent from a
snapshot, large test data, are left out by sparse checkout; no case needs one), each task is
written to an ignored file, and ``git pilot capsule --task-file F --print`` runs there. A
required section is recalled when the capsule holds its heading line and its own text (its
whole subtree where the case says so), whitespace normalised; a long text counts when its first
and last 300 characters are there. Recall is reported over every required section and over
those outside the instruction files (which every capsule holds whole).

Beside it, plain BM25: the root instruction files, every section whose heading names a safety
keyword, then BM25's best sections (whole sections, best first) up to 12 KB, and again up to the
size of git pilot's capsule for the same task ("same size"). See bench/README.md ("Corpus").

``--speed`` times ``git pilot capsule`` on one repository's checkout instead: cold (every cache
wiped), a new task with warm section maps, the warm hit, and ``git status`` beside it (``speed``).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import os
import re
import subprocess
import sys
import tempfile
import time
import tomllib
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
CASES = ROOT / "bench" / "corpus" / "cases.toml"
BM25_BUDGET = 12_000
INSTRUCTION_FILES = ("AGENTS.md", "CLAUDE.md")
KEYWORDS = re.compile(
    r"\b(safety|security|secrets?|credentials?|polic(y|ies)|guardrails?|constraints?|never|do not|don'?t|"
    r"must not|forbidden|human|gates?)\b",
    re.I,
)
_FENCE = re.compile(r"^\s{0,3}(```|~~~)")
_ATX = re.compile(r"^\s{0,3}(#{1,6})\s+(.*?)\s*#*\s*$")
_WORD = re.compile(r"[A-Za-z0-9_]+")
_SKIP_PARTS = frozenset(
    "vendor node_modules third_party third-party tests test testdata fixtures __snapshots__ snapshots "
    "resources benches i18n locales .changeset".split()
)


# --- the corpus ---------------------------------------------------------------------------------


def mirror_root(given: str | None) -> Path | None:
    for cand in (given, os.environ.get("GIT_PILOT_CORPUS_MIRRORS"), str(ROOT.parent / ".mirror")):
        if cand and Path(cand).is_dir():
            return Path(cand)
    return None


def load_cases(path: Path = CASES) -> list[dict[str, Any]]:
    with path.open("rb") as fh:
        return list(tomllib.load(fh)["repo"])


def checkout(mirrors: Path, work: Path, name: str, commit: str) -> Path | None:
    """A work tree of ``name`` at ``commit`` (made once; blobs the snapshot lacks left out)."""
    src = mirrors / name.replace("/", "+") / "repo"
    if not src.exists():
        return None
    dest = work / name.replace("/", "+")
    done = dest / ".git" / "pilot-bench-commit"
    if done.exists() and done.read_text() == commit:
        return dest
    subprocess.run(["rm", "-rf", str(dest)], check=True)
    dest.parent.mkdir(parents=True, exist_ok=True)
    subprocess.run(["git", "clone", "-q", "--no-checkout", str(src), str(dest)], check=True)
    listing = subprocess.run(["git", "-C", str(dest), "ls-tree", "-r", "-z", commit], capture_output=True,
                             check=True).stdout
    blobs: dict[bytes, bytes] = {}
    for entry in listing.split(b"\0"):
        if entry:
            meta, path = entry.split(b"\t", 1)
            _mode, kind, oid = meta.split()
            if kind == b"blob":
                blobs[path] = oid
    batch = subprocess.run(["git", "-C", str(dest), "cat-file", "--batch-check"],
                           input=b"\n".join(sorted(set(blobs.values()))) + b"\n", capture_output=True).stdout
    missing = {line.split()[0] for line in batch.splitlines() if line.endswith(b"missing")}
    absent = sorted(p for p, o in blobs.items() if o in missing)
    if absent:
        subprocess.run(["git", "-C", str(dest), "sparse-checkout", "init", "--no-cone"], check=True,
                       capture_output=True)
        pattern = b"/*\n" + b"".join(b"!/" + re.sub(rb"([*?\[\\])", rb"\\\1", p) + b"\n" for p in absent)
        (dest / ".git" / "info" / "sparse-checkout").write_bytes(pattern)
    subprocess.run(["git", "-C", str(dest), "checkout", "-q", commit], check=True, capture_output=True)
    subprocess.run(["git", "-C", str(dest), "checkout", "-q", "-B", "main"], check=True)
    (dest / ".git" / "info" / "exclude").write_text(".pilot-bench-task-*\n")
    done.write_text(commit)
    return dest


# --- recall ------------------------------------------------------------------------------------


def sections(text: str) -> tuple[list[str], list[tuple[int, str, int, int, int]]]:
    """(lines, [(level, heading, start, end of own text, end of subtree)]) outside fenced code."""
    lines = text.split("\n")
    heads: list[tuple[int, int, str]] = []
    fence: str | None = None
    for i, line in enumerate(lines):
        m = _FENCE.match(line)
        if m:
            fence = None if fence == m.group(1) else (fence or m.group(1))
            continue
        if fence:
            continue
        m = _ATX.match(line)
        if m:
            heads.append((i, len(m.group(1)), m.group(2).strip()))
    out = []
    for k, (i, level, title) in enumerate(heads):
        own = heads[k + 1][0] if k + 1 < len(heads) else len(lines)
        tree = next((j for j, lv, _ in heads[k + 1 :] if lv <= level), len(lines))
        out.append((level, title, i, own, tree))
    return lines, out


def _norm(text: str) -> str:
    return " ".join(text.split())


def recalled(capsule_norm: str, source: str, req: dict[str, Any]) -> bool:
    """Whether the capsule (whitespace-normalised) holds the required section of ``source``."""
    if req.get("level", 1) == 0:
        return _norm(source)[:2000] in capsule_norm
    lines, secs = sections(source)
    cands = [s for s in secs if s[0] == req["level"] and s[1] == req["heading"]]
    if req.get("parent"):
        def parent_of(sec: tuple[int, str, int, int, int]) -> str | None:
            above = [t for t in secs if t[2] < sec[2] and t[0] < sec[0]]
            return above[-1][1] if above else None

        cands = [s for s in cands if parent_of(s) == req["parent"]] or cands
    if not cands:
        return False
    _level, _title, start, own, tree = cands[0]
    body = _norm("\n".join(lines[start + 1 : tree if req.get("include_children") else own])) or _norm(lines[start])
    if len(body) <= 600:
        return body in capsule_norm
    return body[:300] in capsule_norm and body[-300:] in capsule_norm


# --- plain BM25 ---------------------------------------------------------------------------------


@dataclass
class _Sec:
    path: str
    title: str
    text: str
    tf: Counter[str] = field(default_factory=Counter)


def _terms(text: str) -> list[str]:
    return [w.lower() for w in _WORD.findall(text) if len(w) > 1]


def context_files(root: Path) -> list[str]:
    out = subprocess.run(["git", "ls-files", "-z", "--", "*.md", "*.mdx"], cwd=root, capture_output=True).stdout
    files = []
    for raw in out.split(b"\0"):
        p = raw.decode("utf-8", "replace")
        if p and not any(part in _SKIP_PARTS for part in p.split("/")[:-1]) and (root / p).is_file():
            files.append(p)
    return sorted(files)


def bm25_capsule(root: Path, task: str, budget: int) -> str:
    """Instruction files, keyword sections, then BM25's best whole sections up to ``budget`` bytes."""
    parts = [task]
    secs: list[_Sec] = []
    for path in context_files(root):
        try:
            text = (root / path).read_text("utf-8")
        except (OSError, UnicodeDecodeError):
            continue
        if path in INSTRUCTION_FILES:
            if not (root / path).is_symlink():
                parts.append(text)
            continue
        lines, heads = sections(text)
        for _level, title, start, own, _tree in heads:
            body = "\n".join(lines[start:own])
            if KEYWORDS.search(title):
                parts.append(body)
            else:
                secs.append(_Sec(path, title, body, Counter(_terms(title + " " + path) * 2 + _terms(body))))
    query = set(_terms(task))
    n = len(secs) or 1
    df: Counter[str] = Counter()
    for s in secs:
        df.update(set(s.tf) & query)
    avg = sum(sum(s.tf.values()) for s in secs) / n or 1.0

    def score(s: _Sec) -> float:
        length = sum(s.tf.values())
        total = 0.0
        for t in query:
            f = s.tf.get(t, 0)
            if f:
                idf = math.log(1 + (n - df[t] + 0.5) / (df[t] + 0.5))
                total += idf * f * 2.2 / (f + 1.2 * (0.25 + 0.75 * length / avg))
        return total

    used = 0
    for s in sorted(secs, key=lambda s: (-score(s), s.path, s.title)):
        size = len(s.text.encode("utf-8"))
        if score(s) <= 0 or used + size > budget:
            continue
        parts.append(s.text)
        used += size
    return "\n".join(parts)


# --- scoring ----------------------------------------------------------------------------------


def pilot_capsule(root: Path, case: dict[str, Any], pilot: Sequence[str]) -> tuple[str, float, str]:
    task_file = root / f".pilot-bench-task-{case['id']}.md"
    task_file.write_text(case["task"].strip() + "\n")
    for stale in (root / ".git" / "pilot").glob("capsule-*") if (root / ".git" / "pilot").is_dir() else ():
        stale.unlink()  # a capsule of an earlier run (another selector) must not be served
    t0 = time.monotonic()
    proc = subprocess.run([*pilot, "capsule", "--task-file", str(task_file), "--print"], cwd=root,
                          capture_output=True, text=True, errors="replace", timeout=900)
    secs = time.monotonic() - t0
    if proc.returncode != 0:
        return "", secs, proc.stderr.strip().splitlines()[-1] if proc.stderr.strip() else f"exit {proc.returncode}"
    return proc.stdout, secs, ""


def score_repo(repo: dict[str, Any], root: Path, pilot: Sequence[str], bm25: bool = True) -> list[dict[str, Any]]:
    out = []
    for case in repo["case"]:
        text, secs, error = pilot_capsule(root, case, pilot)
        cap = _norm(text)
        size = len(text.encode("utf-8"))
        ref = _norm(bm25_capsule(root, case["task"].strip(), BM25_BUDGET)) if bm25 else ""
        same = _norm(bm25_capsule(root, case["task"].strip(), max(0, size - _fixed_bytes(root, case)))) if bm25 else ""
        reqs = []
        for req in case["required"]:
            source = subprocess.run(["git", "-C", str(root), "show", f"{repo['commit']}:{req['path']}"],
                                    capture_output=True, text=True, errors="replace").stdout
            reqs.append({
                "path": req["path"], "heading": req["heading"],
                "instruction": bool(req.get("in_instruction_file")),
                "pilot": bool(text) and recalled(cap, source, req),
                "bm25": bm25 and recalled(ref, source, req),
                "bm25_same": bm25 and recalled(same, source, req),
            })
        out.append({"repo": repo["name"], "id": case["id"], "style": case.get("style", ""), "bytes": size,
                    "seconds": round(secs, 2), "error": error, "required": reqs,
                    "context_bytes": repo.get("context_bytes", 0)})
    return out


def _fixed_bytes(root: Path, case: dict[str, Any]) -> int:
    """What the plain selector holds before its excerpts: the task, instruction files, keyword sections."""
    return len(bm25_capsule(root, case["task"].strip(), 0).encode("utf-8"))


def totals(results: Iterable[dict[str, Any]]) -> dict[str, Any]:
    rows = list(results)
    reqs = [r for row in rows for r in row["required"]]
    outside = [r for r in reqs if not r["instruction"]]

    def frac(items: Sequence[dict[str, Any]], key: str) -> list[int]:
        return [sum(1 for r in items if r[key]), len(items)]

    ok = [row for row in rows if not row["error"]]
    return {
        "cases": len(rows),
        "failed": len(rows) - len(ok),
        "all": frac(reqs, "pilot"),
        "outside": frac(outside, "pilot"),
        "bm25_outside": frac(outside, "bm25"),
        "bm25_same_outside": frac(outside, "bm25_same"),
        "mean_bytes": round(sum(r["bytes"] for r in ok) / max(1, len(ok))),
    }


def pct(pair: Sequence[int]) -> str:
    return f"{pair[0]}/{pair[1]} = {pair[0] / pair[1]:.1%}" if pair[1] else "0/0"


def render(results: list[dict[str, Any]], verbose: bool) -> list[str]:
    lines = []
    for row in results:
        miss = [f"{r['path']}#{r['heading']}" for r in row["required"] if not r["pilot"]]
        hit = sum(1 for r in row["required"] if r["pilot"])
        lines.append(f"{row['id']}: {hit}/{len(row['required'])}, {row['bytes']} B, {row['seconds']}s"
                     + (f", error: {row['error']}" if row["error"] else "")
                     + (f"; missed {miss}" if miss and verbose else ""))
    repos = sorted({row["repo"] for row in results})
    for name in repos:
        t = totals(r for r in results if r["repo"] == name)
        lines.append(f"repo {name}: outside instruction files {pct(t['outside'])} "
                     f"(BM25 {pct(t['bm25_outside'])}, same size {pct(t['bm25_same_outside'])}), "
                     f"mean {t['mean_bytes'] / 1024:.1f} KB")
    t = totals(results)
    lines.append(f"total: outside instruction files {pct(t['outside'])}, all {pct(t['all'])}, "
                 f"mean capsule {t['mean_bytes'] / 1024:.1f} KB, {t['cases']} cases, {t['failed']} failed")
    lines.append(f"plain BM25: 12 KB {pct(t['bm25_outside'])}, same size {pct(t['bm25_same_outside'])} "
                 "(outside instruction files)")
    return lines


def pilot_command(explicit: str | None = None) -> list[str]:
    """``git pilot`` as this checkout runs it (``--pilot`` or PATH's git-pilot when given)."""
    if explicit:
        return explicit.split()
    return [sys.executable, "-m", "gitpilot"]


def run(mirrors: Path, work: Path, only: str | None, pilot: Sequence[str], bm25: bool = True,
        cases: Path = CASES) -> list[dict[str, Any]]:
    env_path = os.environ.get("PYTHONPATH", "")
    os.environ["PYTHONPATH"] = str(ROOT) + (os.pathsep + env_path if env_path else "")
    results: list[dict[str, Any]] = []
    for repo in load_cases(cases):
        if only and repo["name"] != only:
            continue
        root = checkout(mirrors, work, repo["name"], repo["commit"])
        if root is None:
            continue
        results += score_repo(repo, root, pilot, bm25)
    return results


# --- speed: ``python -m bench corpus --speed OWNER/NAME`` ---------------------------------------
#
# Kept apart from the recall benchmark above: it only shares ``checkout`` and the cases' tasks.


SPEED_ROUNDS = 5
SPEED_HIT_ROUNDS = 11
TARGET_COLD_SECONDS = 3.0
TARGET_NEW_TASK_SECONDS = 0.5


@dataclass
class Timing:
    """One timed run: wall seconds and the CPU seconds (user + system) of the command and of
    every process it waited for (git pilot's own git calls included)."""

    wall: float
    cpu: float


def timed_run(argv: Sequence[str], cwd: Path, env: dict[str, str]) -> tuple[Timing, bytes]:
    import resource

    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    proc = subprocess.run(list(argv), cwd=cwd, env=env, capture_output=True)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)} failed ({proc.returncode}): {proc.stderr.decode()[-400:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return Timing(wall, cpu), proc.stdout


def _git_out(root: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=root, capture_output=True, text=True, check=True).stdout.strip()


def forget_tasks(root: Path) -> None:
    """Make every task new: the capsules, their stamps and the task records go; what does not
    depend on the task (section maps, per-blob term statistics) stays."""
    pilot_dir = Path(_git_out(root, "rev-parse", "--path-format=absolute", "--git-common-dir")) / "pilot"
    if pilot_dir.is_dir():
        for f in pilot_dir.iterdir():
            if f.name.startswith(("capsule-", ".capsule-")) and f.is_file():
                f.unlink()
    _delete_refs(root, "refs/pilot/tasks/")


def forget_all(root: Path) -> None:
    """Cold: every cache git pilot keeps for the repository goes (``<git common dir>/pilot/``,
    its notes and task records)."""
    import shutil

    pilot_dir = Path(_git_out(root, "rev-parse", "--path-format=absolute", "--git-common-dir")) / "pilot"
    shutil.rmtree(pilot_dir, ignore_errors=True)
    _delete_refs(root, "refs/pilot/", "refs/notes/pilot/")


def _delete_refs(root: Path, *prefixes: str) -> None:
    refs = _git_out(root, "for-each-ref", "--format=%(refname)", *prefixes).split()
    if refs:
        subprocess.run(["git", "update-ref", "--stdin"], cwd=root, check=True,
                       input="".join(f"delete {r}\n" for r in refs).encode())


def _median(xs: Sequence[float]) -> float:
    import statistics

    return statistics.median(xs) if xs else 0.0


def _summary(runs: Sequence[Timing]) -> dict[str, Any]:
    return {"wall": round(_median([r.wall for r in runs]), 4), "cpu": round(_median([r.cpu for r in runs]), 4),
            "runs": len(runs), "walls": [round(r.wall, 3) for r in runs]}


def speed_pilot(explicit: str | None, work: Path) -> tuple[list[str], dict[str, str], str]:
    """How git pilot is started: ``--pilot`` as given, else ``git pilot`` through git with a clean
    install of this checkout first on PATH (``common.installed_pilot``), as a user has it."""
    from bench import common

    env = common.bench_env({"GIT_PILOT_SKIP_HOOKS": "1"})
    if explicit:
        return explicit.split(), env, explicit
    bin_dir = work / "speed-bin"
    bin_dir.mkdir(parents=True, exist_ok=True)
    _python, argv = common.installed_pilot()
    shim = bin_dir / "git-pilot"
    shim.unlink(missing_ok=True)
    if len(argv) == 1:
        shim.symlink_to(argv[0])
    else:  # no venv could be made: this checkout with the real interpreter
        shim.write_text("#!/bin/sh\nexec " + " ".join(f'"{a}"' for a in argv) + ' "$@"\n')
        shim.chmod(0o755)
        env["PYTHONPATH"] = str(ROOT)
    env["PATH"] = f"{bin_dir}{os.pathsep}{env.get('PATH', '')}"
    return ["git", "pilot"], env, f"git pilot ({' '.join(argv)})"


def speed(mirrors: Path, work: Path, name: str, pilot: str | None, rounds: int = SPEED_ROUNDS,
          hit_rounds: int = SPEED_HIT_ROUNDS) -> dict[str, Any]:
    """Cold, new-task and warm-hit ``git pilot capsule`` on a corpus repository, beside ``git status``.

    - cold: every cache wiped (``forget_all``), then a capsule: section maps parsed, term
      statistics counted, the code searched;
    - new task: section maps and term statistics warm (another task built them), the task never
      built (``forget_tasks``);
    - warm hit: the same task again, nothing changed;
    - ``git status`` alternates with the warm hit, in the same tree and run.

    Each is the median of its runs, wall and CPU; the capsule of a task must be the same bytes
    whichever way it was made.
    """
    repo = next((r for r in load_cases() if r["name"] == name), None)
    if repo is None:
        raise SystemExit(f"corpus: no repository {name} in {CASES.name}")
    root = checkout(mirrors, work, name, repo["commit"])
    if root is None:
        raise SystemExit(f"corpus: no mirror of {name} under {mirrors}")
    argv, env, shown = speed_pilot(pilot, work)
    tasks = []
    for case in repo["case"]:
        f = root / f".pilot-bench-task-{case['id']}.md"
        f.write_text(case["task"].strip() + "\n")
        tasks.append(f)

    def capsule(task: Path) -> tuple[Timing, bytes]:
        return timed_run([*argv, "capsule", "--task-file", str(task), "--print"], root, env)

    load_before = os.getloadavg()
    seen: dict[str, bytes] = {}
    mismatch: list[str] = []

    def check(task: Path, out: bytes, how: str) -> None:
        if seen.setdefault(task.name, out) != out:
            mismatch.append(f"{task.name} ({how})")

    timed_run(["git", "status"], root, env)  # the index refreshed once, as after any checkout
    cold: list[Timing] = []
    for i in range(rounds):
        forget_all(root)
        t, out = capsule(tasks[i % len(tasks)])
        cold.append(t)
        check(tasks[i % len(tasks)], out, "cold")
    new: list[Timing] = []
    for i in range(rounds):
        forget_tasks(root)
        capsule(tasks[(i + 1) % len(tasks)])  # another task: the maps and term statistics are warm
        t, out = capsule(tasks[i % len(tasks)])
        new.append(t)
        check(tasks[i % len(tasks)], out, "new task")
    hit: list[Timing] = []
    status: list[Timing] = []
    capsule(tasks[0])
    for _ in range(hit_rounds):
        t, out = capsule(tasks[0])
        hit.append(t)
        check(tasks[0], out, "warm hit")
        status.append(timed_run(["git", "status"], root, env)[0])
    md = _git_out(root, "ls-files", "-z", "--", "*.md", "*.mdx").split("\0")
    md = [p for p in md if p]
    return {
        "repo": name, "commit": repo["commit"], "pilot": shown,
        "files": len(_git_out(root, "ls-files", "-z").split("\0")) - 1,
        "markdown_files": len(md), "markdown_bytes": sum((root / p).stat().st_size for p in md if (root / p).is_file()),
        "load_before": [round(x, 2) for x in load_before], "load_after": [round(x, 2) for x in os.getloadavg()],
        "cpus": os.cpu_count(), "cold": _summary(cold), "new_task": _summary(new), "hit": _summary(hit),
        "git_status": _summary(status), "mismatch": mismatch,
        "capsule_sha256": {k: hashlib.sha256(v).hexdigest()[:16] for k, v in sorted(seen.items())},
    }


def render_speed(r: dict[str, Any]) -> list[str]:
    def row(label: str, s: dict[str, Any], target: str = "") -> str:
        return (f"  {label:<34} {s['wall'] * 1000:8.0f} ms wall {s['cpu'] * 1000:8.0f} ms CPU"
                f"  ({s['runs']} runs){target}")

    hit, st = r["hit"], r["git_status"]
    lines = [
        f"speed {r['repo']} at {r['commit'][:12]}: {r['files']} files, {r['markdown_files']} Markdown files "
        f"({r['markdown_bytes'] / 1e6:.1f} MB); {r['pilot']}",
        f"  load average {' '.join(map(str, r['load_before']))} before, {' '.join(map(str, r['load_after']))} after, "
        f"{r['cpus']} CPUs (shared machine: CPU time is the steadier figure)",
        row("cold (every cache wiped)", r["cold"], f"  target <= {TARGET_COLD_SECONDS:.0f} s"),
        row("new task (warm section maps)", r["new_task"], f"  target <= {TARGET_NEW_TASK_SECONDS} s"),
        row("warm hit (same task again)", hit),
        row("git status", st),
        f"  warm hit / git status: {hit['wall'] / st['wall']:.2f}x wall, {hit['cpu'] / max(st['cpu'], 1e-9):.2f}x CPU"
        "  target <= 1",
    ]
    lines.append("  capsules: " + ", ".join(f"{k.removeprefix('.pilot-bench-task-').removesuffix('.md')} {v}"
                                            for k, v in r["capsule_sha256"].items()))
    if r["mismatch"]:
        lines.append(f"  NOT THE SAME BYTES: {', '.join(r['mismatch'])}")
    return lines


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench corpus")
    ap.add_argument("--mirror-root")
    ap.add_argument("--work", default=str(Path(tempfile.gettempdir()) / "git-pilot-corpus"))
    ap.add_argument("--only")
    ap.add_argument("--cases", default=str(CASES), help="the cases file (default: bench/corpus/cases.toml)")
    ap.add_argument("--pilot", help="the command that runs git pilot (default: this checkout)")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("-v", "--verbose", action="store_true")
    ap.add_argument("--speed", metavar="OWNER/NAME", help="time cold, new-task and warm capsules beside git status")
    ap.add_argument("--rounds", type=int, default=SPEED_ROUNDS, help="runs of each --speed measurement")
    args = ap.parse_args(argv)
    mirrors = mirror_root(args.mirror_root)
    if mirrors is None:
        print("corpus: no mirrors (give --mirror-root DIR or GIT_PILOT_CORPUS_MIRRORS); nothing scored")
        return 0
    if args.speed:
        report = speed(mirrors, Path(args.work), args.speed, args.pilot, args.rounds, max(args.rounds, SPEED_HIT_ROUNDS))
        print(json.dumps(report, indent=1, sort_keys=True) if args.json else "\n".join(render_speed(report)))
        return 1 if report["mismatch"] else 0
    results = run(mirrors, Path(args.work), args.only, pilot_command(args.pilot), cases=Path(args.cases))
    if args.json:
        print(json.dumps({"totals": totals(results), "cases": results}, indent=1, sort_keys=True))
    else:
        print("\n".join(render(results, args.verbose)))
    return 0
