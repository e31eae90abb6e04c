"""The capsule on real repositories: the development corpus, scored as a user's capsule is built.

``python -m bench corpus [--mirror-root DIR] [--work DIR] [--only OWNER/NAME] [--json] [-v]``

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
"""

from __future__ import annotations

import argparse
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


def run(mirrors: Path, work: Path, only: str | None, pilot: Sequence[str], bm25: bool = True) -> list[dict[str, Any]]:
    env_path = os.environ.get("PYTHONPATH", "")
    os.environ["PYTHONPATH"] = str(ROOT) + (os.pathsep + env_path if env_path else "")
    results: list[dict[str, Any]] = []
    for repo in load_cases():
        if only and repo["name"] != only:
            continue
        root = checkout(mirrors, work, repo["name"], repo["commit"])
        if root is None:
            continue
        results += score_repo(repo, root, pilot, bm25)
    return results


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench corpus")
    ap.add_argument("--mirror-root")
    ap.add_argument("--work", default=str(Path(tempfile.gettempdir()) / "git-pilot-corpus"))
    ap.add_argument("--only")
    ap.add_argument("--pilot", help="the command that runs git pilot (default: this checkout)")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("-v", "--verbose", action="store_true")
    args = ap.parse_args(argv)
    mirrors = mirror_root(args.mirror_root)
    if mirrors is None:
        print("corpus: no mirrors (give --mirror-root DIR or GIT_PILOT_CORPUS_MIRRORS); nothing scored")
        return 0
    results = run(mirrors, Path(args.work), args.only, pilot_command(args.pilot))
    if args.json:
        print(json.dumps({"totals": totals(results), "cases": results}, indent=1, sort_keys=True))
    else:
        print("\n".join(render(results, args.verbose)))
    return 0
