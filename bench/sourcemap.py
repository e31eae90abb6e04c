"""``git pilot sourcemap`` on a synthetic 20,000-file repository: cold build and warm cache hit.

The repository is generated deterministically (seeded) in a temporary directory: seven
languages in proportions like a polyglot monorepo, files of log-normal size (median ~3 KB,
a tail of 40-120 KB files), imports that follow a Zipf law (a few modules are imported
everywhere), plus vendored, generated, hidden and credential-shaped paths and a few
symlinks, and a history of 40 commits touching Zipf-chosen files.

- cold: the cache note is deleted before each run (``git update-ref -d``), so every run
  reads all blobs, ranks, renders and writes the note. Target: median at most 3 s.
- warm: the tree is clean and its note exists; timed in alternation with ``git status``
  on the same repository. Target: median ratio at most 2.5.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import resource
import shutil
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

from bench.common import alternate, env, git, pilot_argv

COLD_TARGET_S = 3.0
WARM_TARGET = 2.5
SEED = 20261130

# language: (share of files, extension, directory root)
LANGS = {
    "python": (0.32, ".py", "src/app"),
    "ts": (0.24, ".ts", "web/src"),
    "go": (0.14, ".go", "services"),
    "rust": (0.08, ".rs", "crates"),
    "java": (0.08, ".java", "java/src/main/java/com/acme"),
    "cpp": (0.08, ".cc", "native"),
    "ruby": (0.06, ".rb", "ruby/lib"),
}
WORDS = (
    "order user account item cart price store cache queue event stream token session route "
    "handler client server worker config parser render layout index search filter report "
    "billing invoice ledger payment refund audit metric trace span batch job task plan "
    "graph node edge tree leaf shard replica region zone policy rule quota limit"
).split()


def _name(rng: random.Random, parts: int = 2) -> str:
    return "_".join(rng.choice(WORDS) for _ in range(parts))


def _camel(snake: str) -> str:
    return "".join(w.capitalize() for w in snake.split("_"))


def _size(rng: random.Random) -> int:
    if rng.random() < 0.02:
        return rng.randint(40_000, 120_000)
    return int(min(40_000, max(300, rng.lognormvariate(math.log(3000), 0.8))))


def _body(rng: random.Random, lang: str, indent: str, lines: int) -> str:
    out = []
    for _ in range(lines):
        a, b = rng.choice(WORDS), rng.choice(WORDS)
        if lang == "python":
            out.append(f"{indent}{a}_{b} = self.{a}.get({b!r}, {rng.randint(0, 99)})")
        elif lang == "ruby":
            out.append(f"{indent}{a}_{b} = @{a}.fetch(:{b}, {rng.randint(0, 99)})")
        elif lang == "go":
            out.append(f'{indent}{a}{_camel(b)} := s.{_camel(a)}.Get("{b}", {rng.randint(0, 99)})')
        elif lang == "rust":
            out.append(f'{indent}let {a}_{b} = self.{a}.get("{b}").unwrap_or({rng.randint(0, 99)});')
        else:
            out.append(
                f'{indent}const {a}{_camel(b)} = this.{a}.get("{b}", {rng.randint(0, 99)});'
                if lang == "ts"
                else f'{indent}int {a}{_camel(b)} = {a}.get("{b}", {rng.randint(0, 99)});'
            )
    return "\n".join(out) + "\n"


def _imports(lang: str, targets: list[str], path: str) -> str:
    lines = []
    for t in targets:
        stem = t.rsplit("/", 1)[-1].rsplit(".", 1)[0]
        if lang == "python":
            lines.append(f"from {t[:-3].replace('/', '.')} import {_camel(stem)}")
        elif lang == "ts":
            rel = os.path.relpath(t[:-3], os.path.dirname(path))
            lines.append(f'import {{ {_camel(stem)} }} from "{rel if rel.startswith(".") else "./" + rel}";')
        elif lang == "go":
            lines.append(f'import "github.com/acme/mono/{os.path.dirname(t)}"')
        elif lang == "rust":
            lines.append(f"use crate::{stem}::{_camel(stem)};")
        elif lang == "java":
            lines.append(f"import {t[len('java/src/main/java/') : -5].replace('/', '.')};")
        elif lang == "cpp":
            lines.append(f'#include "{t[:-3]}.h"')
        else:
            lines.append(f"require_relative '{os.path.relpath(t[:-3], os.path.dirname(path))}'")
    return "\n".join(lines) + "\n\n"


def _file(rng: random.Random, lang: str, path: str, targets: list[str]) -> str:
    size = _size(rng)
    parts = [
        f"// {path}: a synthetic file of the source map benchmark\n"
        if lang not in ("python", "ruby")
        else f"# {path}: a synthetic file of the benchmark\n"
    ]
    if lang == "go":
        parts.append(f"package {os.path.basename(os.path.dirname(path))}\n\n")
    if lang == "java":
        parts.append(f"package {os.path.dirname(path)[len('java/src/main/java/') :].replace('/', '.')};\n\n")
    parts.append(_imports(lang, targets, path))
    total = sum(len(p) for p in parts)
    while total < size:
        cls = _camel(_name(rng))
        methods = [_name(rng) for _ in range(rng.randint(2, 7))]
        chunk = _declare(rng, lang, cls, methods)
        parts.append(chunk)
        total += len(chunk)
    return "".join(parts)


def _declare(rng: random.Random, lang: str, cls: str, methods: list[str]) -> str:
    n = rng.randint(3, 9)
    if lang == "python":
        ms = "".join(
            f"    def {m}(self, x):\n{_body(rng, lang, '        ', n)}        return x\n\n" for m in methods
        )
        return (
            f'class {cls}:\n    """{cls} of the synthetic app."""\n\n{ms}\ndef make_{methods[0]}():\n'
            f"    return {cls}()\n\n\n"
        )
    if lang == "ts":
        ms = "".join(
            f"  {_camel(m)}(x: number): number {{\n{_body(rng, lang, '    ', n)}    return x;\n  }}\n"
            for m in methods
        )
        make = f"export function make{cls}(): {cls} {{\n  return new {cls}();\n}}\n\n"
        return f"export class {cls} {{\n{ms}}}\n\n{make}"
    if lang == "go":
        ms = "".join(
            f"func (s *{cls}) {_camel(m)}(x int) int {{\n{_body(rng, lang, chr(9), n)}\treturn x\n}}\n\n"
            for m in methods
        )
        return f"type {cls} struct {{\n\tID int\n}}\n\n{ms}func New{cls}() *{cls} {{ return &{cls}{{}} }}\n\n"
    if lang == "rust":
        ms = "".join(
            f"    pub fn {m}(&self, x: i64) -> i64 {{\n{_body(rng, lang, '        ', n)}        x\n    }}\n"
            for m in methods
        )
        return (
            f"pub struct {cls} {{\n    id: u64,\n}}\n\nimpl {cls} {{\n{ms}}}\n\n"
            f"pub fn make_{methods[0]}() -> {cls} "
            f"{{ {cls} {{ id: 0 }} }}\n\n"
        )
    if lang == "java":
        ms = "".join(
            f"    public int {_camel(m)}(int x) {{\n{_body(rng, lang, '        ', n)}"
            f"        return x;\n    }}\n"
            for m in methods
        )
        return f"class {cls} {{\n{ms}}}\n\n"
    if lang == "cpp":
        ms = "".join(
            f"int {cls}::{_camel(m)}(int x) {{\n{_body(rng, lang, '    ', n)}    return x;\n}}\n\n"
            for m in methods
        )
        return (
            f"class {cls} {{\n public:\n  int run(int x);\n}};\n\n"
            f"{ms}static int helper_{methods[0]}(int x)\n{{\n"
            f"    return x;\n}}\n\n"
        )
    ms = "".join(f"    def {m}(x)\n{_body(rng, lang, '      ', n)}      x\n    end\n" for m in methods)
    return f"module Synth\n  class {cls}\n{ms}  end\nend\n\n"


def _layout(rng: random.Random, files: int) -> dict[str, list[str]]:
    paths: dict[str, list[str]] = {}
    for lang, (share, ext, root) in LANGS.items():
        count = int(files * share)
        dirs = max(4, count // 40)
        out = []
        seen: set[str] = set()
        for i in range(count):
            d = f"{root}/{WORDS[(i * 7) % dirs % len(WORDS)]}{(i % dirs) // len(WORDS) or ''}"
            if rng.random() < 0.2:
                d += f"/{rng.choice(WORDS)}"
            p = f"{d}/{_name(rng)}_{i}{ext}"
            if p not in seen:
                seen.add(p)
                out.append(p)
        paths[lang] = out
    return paths


def generate(dest: Path, files: int = 20_000, commits: int = 40) -> Path:
    """Write and commit the synthetic repository (deterministic for a given ``files``)."""
    rng = random.Random(SEED)
    if dest.exists():
        shutil.rmtree(dest)
    dest.mkdir(parents=True)
    git(dest, "init", "-q", "-b", "main")
    extras = _extras()
    layout = _layout(rng, files - len(extras))
    everything: list[str] = []
    for lang, paths in layout.items():
        weights = [1 / (k + 1) for k in range(len(paths))]  # Zipf: the first modules are central
        for p in paths:
            targets = sorted(set(rng.choices(paths, weights, k=rng.randint(2, 8))) - {p})
            _write(dest / p, _file(rng, lang, p, targets))
            everything.append(p)
    for p, text in extras.items():
        _write(dest / p, text)
    for i, p in enumerate(everything[:: max(1, len(everything) // 4)][:4]):
        link = dest / "links" / f"link{i}{os.path.splitext(p)[1]}"
        link.parent.mkdir(parents=True, exist_ok=True)
        os.symlink(os.path.relpath(dest / p, link.parent), link)
    git(dest, "add", "-A")
    git(dest, "commit", "-q", "-m", "synthetic monorepo")
    weights = [1 / (k + 1) ** 0.8 for k in range(len(everything))]
    shuffled = everything[:]
    rng.shuffle(shuffled)
    for c in range(commits):
        touched = sorted(set(rng.choices(shuffled, weights, k=rng.randint(3, 30))))
        for p in touched:
            with open(dest / p, "a", encoding="utf-8") as fh:
                fh.write(f"\n{'#' if p.endswith(('.py', '.rb')) else '//'} change {c}\n")
        git(dest, "add", "--", *touched)
        git(dest, "commit", "-q", "-m", f"change {c}")
    return dest


def _extras() -> dict[str, str]:
    """Paths the map must leave out: vendored, generated, hidden, credential-shaped."""
    out: dict[str, str] = {}
    for i in range(150):
        out[f"vendor/github.com/lib{i % 10}/pkg/file{i}.go"] = f"package pkg\n\nfunc Vendored{i}() {{}}\n"
        out[f"web/node_modules/dep{i % 15}/index{i}.js"] = (
            f"function dep{i}() {{}}\nmodule.exports = dep{i};\n"
        )
    for i in range(60):
        out[f"src/app/proto/msg{i}_pb2.py"] = (
            f"# Generated by the protocol buffer compiler.  DO NOT EDIT!\nclass Msg{i}:\n    pass\n"
        )
        out[f"services/api/gen{i}.pb.go"] = (
            f"// Code generated by protoc-gen-go. DO NOT EDIT.\npackage api\n\ntype Msg{i} struct{{}}\n"
        )
    out["web/dist/bundle.min.js"] = "function a(){}" * 200
    out[".github/scripts/release.py"] = "def release():\n    pass\n"
    out[".tools/lint.py"] = "def lint():\n    pass\n"
    out["deploy/id_rsa"] = "not a real key\n"
    out["config/secrets.json"] = "{}\n"
    for i in range(200):
        out[f"docs/page{i}.md"] = f"# Page {i}\n\nText.\n"
    return out


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def _cold_once(repo: Path, e: dict[str, str]) -> tuple[float, float]:
    """Wall seconds and CPU seconds (user + system, the command and its git children) of a cold run."""
    subprocess.run(["git", "update-ref", "-d", "refs/notes/pilot/sourcemap"], cwd=repo, env=e, check=False)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    proc = subprocess.run([*pilot_argv(), "sourcemap"], cwd=repo, env=e, capture_output=True)
    elapsed = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        raise SystemExit(f"git pilot sourcemap failed: {proc.stderr.decode()[:400]}")
    return elapsed, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench sourcemap")
    ap.add_argument("--files", type=int, default=20_000)
    ap.add_argument("--cold-rounds", type=int, default=5)
    ap.add_argument("--rounds", type=int, default=21)
    ap.add_argument("--keep", metavar="DIR", help="generate the repository in DIR and keep it")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    tmp = tempfile.mkdtemp(prefix="bench-sourcemap-")
    try:
        repo = generate(Path(args.keep) if args.keep else Path(tmp) / "repo", files=args.files)
        # An installed package runs from compiled bytecode: give both sides a private, writable
        # cache (this sandbox sets PYTHONDONTWRITEBYTECODE, which would recompile every module).
        e = env({"PYTHONPYCACHEPREFIX": str(Path(tmp) / "pycache")})
        e.pop("PYTHONDONTWRITEBYTECODE", None)
        tracked = len(git(repo, "ls-files", "-z").split(b"\0")) - 1
        colds = [_cold_once(repo, e) for _ in range(args.cold_rounds)]
        cold = statistics.median(w for w, _ in colds)
        cold_cpu = statistics.median(c for _, c in colds)
        load = os.getloadavg()[0]
        out = subprocess.run([*pilot_argv(), "sourcemap"], cwd=repo, env=e, capture_output=True, text=True)
        again = subprocess.run([*pilot_argv(), "sourcemap"], cwd=repo, env=e, capture_output=True, text=True)
        if out.stdout != again.stdout:
            raise SystemExit("the warm map differs from the cold map")
        medians = alternate(
            {
                "git status": (["git", "status"], repo, e),
                "git pilot sourcemap (warm)": ([*pilot_argv(), "sourcemap"], repo, e),
            },
            rounds=args.rounds,
        )
    finally:
        if not args.keep:
            shutil.rmtree(tmp, ignore_errors=True)
    base = medians["git status"]
    warm = medians["git pilot sourcemap (warm)"]
    result = {
        "files": tracked,
        "cold_rounds": args.cold_rounds,
        "rounds": args.rounds,
        "cold_s": round(cold, 3),
        "cold_cpu_s": round(cold_cpu, 3),
        "cold_target_s": COLD_TARGET_S,
        "load_average": round(load, 2),
        "cpus": os.cpu_count(),
        "git_status_ms": round(base * 1000, 1),
        "warm_ms": round(warm * 1000, 1),
        "warm_ratio": round(warm / base, 2),
        "warm_target": WARM_TARGET,
        "map_chars": len(out.stdout),
        "pilot": " ".join(pilot_argv()),
    }
    result["ok"] = cold <= COLD_TARGET_S and warm / base <= WARM_TARGET
    if args.json:
        print(json.dumps(result, sort_keys=True))
    else:
        print(f"repository: {tracked} tracked files; map of {result['map_chars']} chars")
        print(f"load average {load:.1f} on {os.cpu_count()} CPUs")
        print(f"cold (no cache note), median of {args.cold_rounds}: {cold:.2f} s wall, {cold_cpu:.2f} s CPU "
              f"(target <= {COLD_TARGET_S} s)")
        print(f"git status                 {result['git_status_ms']:8.1f} ms")
        print(f"git pilot sourcemap (warm) {result['warm_ms']:8.1f} ms")
        print(f"warm ratio {result['warm_ratio']} (target <= {WARM_TARGET}): "
              f"{'ok' if result['ok'] else 'OVER TARGET'}")
    return 0 if result["ok"] else 1
