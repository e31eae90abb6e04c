"""Fit the capsule's weights on the development corpus, and judge them leave-one-repository-out.

``python -m bench fit [--mirror-root DIR] [--work DIR] [--rounds N] [--kicks N] [--loro] [--write]``

For every case of ``bench/corpus/cases.toml`` the capsule's own pipeline runs up to its scores
(``context.capsule.prepare`` and ``context.select.Ranking``: the same candidates, signals,
mandatory sections and area a real capsule has); the signals are kept, so a weight vector is
judged by re-scoring and re-choosing (``context.choose``) alone. A document kind that fewer
than ``MIN_KIND_REPOS`` repositories have is not fitted (``thin_kinds``): its prior stays as
the table states it, in the order the kinds are meant to come. The weights of the evidence that
a document is about the task (``EVIDENCE``) are never negative. The objective is the number of
required sections outside the instruction files that the capsule would hold, plus a small term
for the rank of each required section's document (it tells better from worse where the count
does not move). Coordinate ascent changes one weight at a time by ±0.5 and ±1; where no such
step helps, ``--kicks`` times a few weights are moved at random (a fixed seed) and the ascent
climbs again from there, keeping the better table.

``--loro`` fits on eleven repositories and scores the twelfth, for each in turn: the figure that
says what the weights are worth on a repository nobody fitted them to. ``--write`` puts the
weights fitted on all twelve into ``gitpilot/context/weights.py`` (between the FIT markers).
What a weight fit here does to real capsules is measured by ``python -m bench corpus``.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import pickle
import random
import sys
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

from bench import corpus

ROOT = Path(__file__).resolve().parents[1]
WEIGHTS_PY = ROOT / "gitpilot" / "context" / "weights.py"
STEPS = (-1.0, -0.5, 0.5, 1.0)
RANK_TERM = 2.0  # weight of the mean reciprocal document rank in the objective
MIN_KIND_REPOS = 4  # a document kind is fitted only where this many repositories have one
# Evidence that a document or section is about the task: more of it never lowers a score, so
# its weights are never negative (a fitted negative weight says which documents of these twelve
# repositories were needed, not what makes a document relevant). Kinds and conventions may be.
EVIDENCE = frozenset({"bm25", "heads", "path", "dir", "ids", "linked", "area", "s_bm25", "s_head", "s_ids"})
KICKS = 6  # restarts of the ascent from the best table with KICK_KEYS weights moved at random
KICK_KEYS = 4
KICK_SEED = 0


@dataclass
class Case:
    repo: str
    id: str
    docs: list[Any]
    doc_signals: list[dict[str, float]]
    sec_signals: list[list[dict[str, float]]]
    shown: dict[str, list[tuple[int, int]]]
    priors: dict[int, list[tuple[str, float]]]
    required: list[tuple[str, tuple[int, int] | None]]  # outside the instruction files
    budget: int
    max_section: int
    floors: tuple[float, float]  # of s_bm25 and s_head (``features.Signals``)
    sec_best: list[tuple[float, float]]  # each document's best s_bm25 and s_head, as BM25 gives them
    named: list[int]  # the documents the task names by their paths (``select.named_first``)


def _code_hash() -> str:
    """The key of the prepared cases: the code that prepares them, and what a ``Case`` holds (a
    field added here must not be read from a copy kept before it)."""
    h = hashlib.blake2b(digest_size=16)
    for p in sorted((ROOT / "gitpilot" / "context").glob("*.py")):
        if p.name not in ("weights.py", "choose.py"):
            h.update(p.read_bytes())
    h.update(" ".join(f.name for f in fields(Case)).encode())
    return h.hexdigest()


def _required_range(doc: Any, req: Mapping[str, Any]) -> tuple[int, int] | None:
    smap = doc.smap
    if req.get("level", 1) == 0:
        return (1, smap.line_count)
    cands = [s for s in smap.sections if s.level == req["level"] and s.title == req["heading"]]
    if req.get("parent"):
        cands = [s for s in cands if s.parent is not None and smap.sections[s.parent].title == req["parent"]] or cands
    if not cands:
        return None
    s = cands[0]
    return (s.start, s.end if req.get("include_children") else s.body_end)


def prepare_case(root: Path, repo: Mapping[str, Any], case: Mapping[str, Any], agent: str | None = None) -> Case:
    from gitpilot.context import capsule, warm
    from gitpilot.context.features import Signals
    from gitpilot.context.select import Ranking
    from gitpilot.repo import Repo

    task = case["task"].strip() + "\n"
    r = Repo.discover(root)
    state = warm.prepare(r, task, agent)
    got = capsule.prepare(r, task, state)
    ranking = Ranking(got.docs, task, got.shown, area=got.area.scores, area_files=got.area.core)
    sigs = ranking.signals
    assert isinstance(sigs, Signals)
    # every section's word signals as BM25 gives them: ``judge`` divides them by the best of the
    # documents each weight table makes quotable, as ``Ranking`` does
    sigs.fill_sections(range(len(sigs)), None)
    by_path = {d.path: d for d in ranking.docs}
    by_path.update({p: _Geo(m) for p, m in got.files.maps.items() if p not in by_path})
    required = []
    for req in case["required"]:
        if req.get("in_instruction_file"):
            continue
        doc = by_path.get(req["path"])
        required.append((req["path"], _required_range(doc, req) if doc is not None else None))
    return Case(
        repo["name"], case["id"], ranking.docs, [s.values for s in ranking.signals],
        [s.sections for s in ranking.signals], {k: list(v) for k, v in got.shown.items()},
        {d: list(v) for d, v in ranking.priors.items()}, required,
        state.options.max_excerpt_bytes, state.options.max_section_bytes, sigs.floors,
        [(max(s.bm25.values(), default=0.0), max(s.head.values(), default=0.0)) for s in sigs],
        sorted(ranking.named),
    )


class _Geo:
    def __init__(self, smap: Any) -> None:
        self.smap = smap


def load(mirrors: Path, work: Path, only: str | None = None, agent: str | None = None,
         cases_file: Path = corpus.CASES) -> list[Case]:
    name = "fit-cases" + (f"-{agent}" if agent else "") + ("" if cases_file == corpus.CASES else f"-{cases_file.stem}")
    cache = work / f"{name}.pkl"
    key = _code_hash() + hashlib.blake2b(cases_file.read_bytes(), digest_size=8).hexdigest()
    if cache.exists():
        try:
            with cache.open("rb") as fh:
                stored = pickle.load(fh)
        except Exception:  # (a record of older code whose classes have changed: made again)
            stored = {}
        if isinstance(stored, dict) and stored.get("key") == key and stored.get("only") == only:
            return list(stored["cases"])
    import os

    os.environ.setdefault("GIT_PILOT_SKIP_HOOKS", "1")
    cases: list[Case] = []
    for repo in corpus.load_cases(cases_file):
        if only and repo["name"] != only:
            continue
        root = corpus.checkout(mirrors, work, repo["name"], repo["commit"])
        if root is None:
            continue
        for case in repo["case"]:
            cases.append(prepare_case(root, repo, case, agent))
            print(f"prepared {case['id']}", file=sys.stderr, flush=True)
    with cache.open("wb") as fh:
        pickle.dump({"key": key, "only": only, "cases": cases}, fh)
    return cases


# --- judging a weight vector -------------------------------------------------------------------


class _LazySections:
    """Section scores computed for the documents ``choose`` looks at only, their word signals
    divided as ``features.Signals.fill_sections`` divides them (``scale``: by what)."""

    def __init__(self, rows: Sequence[Sequence[Mapping[str, float]]], table: Mapping[str, float],
                 scale: tuple[float, float] = (1.0, 1.0)) -> None:
        self.rows = rows
        self.table = [(k, w) for k, w in table.items() if w]
        self.by = {"s_bm25": scale[0], "s_head": scale[1]}
        self.memo: dict[int, list[float]] = {}

    def __len__(self) -> int:
        return len(self.rows)

    def __getitem__(self, d: int) -> list[float]:
        got = self.memo.get(d)
        if got is None:
            got = [sum(w * self.value(r, k) for k, w in self.table) for r in self.rows[d]]
            self.memo[d] = got
        return got

    def names(self, d: int) -> dict[int, float]:
        """Each section's part of its score from the task's names (``SectionScores.names``)."""
        w = next((w for k, w in self.table if k == "s_ids"), 0.0)
        return {i: w * r["s_ids"] for i, r in enumerate(self.rows[d]) if r.get("s_ids")} if w else {}

    def value(self, row: Mapping[str, float], key: str) -> float:
        v = row.get(key, 0.0)
        by = self.by.get(key)
        return min(v / by, 1.0) if by is not None and by > 0 and v else v


def sections_for(case: Case, scores: Sequence[float], sec_w: Mapping[str, float]) -> _LazySections:
    """The section scores of ``case`` under ``sec_w``, with the word signals divided by the best
    of the documents that ``scores`` makes quotable (a positive score), or the floor."""
    quotable = [case.sec_best[d] for d, s in enumerate(scores) if s > 0]
    by = tuple(max(max((b[i] for b in quotable), default=0.0), case.floors[i]) for i in (0, 1))
    return _LazySections(case.sec_signals, sec_w, (by[0], by[1]))


def covered(ranges: Sequence[tuple[int, int]], want: tuple[int, int] | None) -> bool:
    if want is None:
        return False
    a, b = want
    cur = a
    for s, e in sorted(ranges):
        if s > cur:
            break
        cur = max(cur, e + 1)
    return cur > b


def choice(case: Case, doc_w: Mapping[str, float], sec_w: Mapping[str, float]) -> tuple[list[float], Any]:
    """The documents' scores under ``doc_w`` and what the capsule chooses with them (``Ranking``'s
    steps: the weighted score, the named documents first, the section scores, ``choose``)."""
    from gitpilot.context.choose import choose
    from gitpilot.context.select import named_first
    from gitpilot.context.weights import doc_score

    scores = [doc_score(v, doc_w) for v in case.doc_signals]
    named_first(scores, case.named)
    secs = sections_for(case, scores, sec_w)
    return scores, choose(case.docs, scores, secs, {}, case.shown, case.budget, case.max_section,
                          conventions=case.priors, left_out=False)


def judge(case: Case, doc_w: Mapping[str, float], sec_w: Mapping[str, float]) -> tuple[int, float]:
    """(required sections held, sum of reciprocal ranks of their documents) for one case."""
    scores, sel = choice(case, doc_w, sec_w)
    ranges: dict[str, list[tuple[int, int]]] = {k: list(v) for k, v in case.shown.items()}
    for p in sel.picks:
        ranges.setdefault(p.path, []).append((p.start, p.end))
    index = {d.path: i for i, d in enumerate(case.docs)}
    hits = 0
    soft = 0.0
    for path, want in case.required:
        hits += covered(_bridged(ranges.get(path, []), case, path), want)
        i = index.get(path)
        if i is not None:
            soft += 1.0 / (1 + sum(1 for s in scores if s > scores[i]))
    return hits, soft


def _bridged(ranges: list[tuple[int, int]], case: Case, path: str) -> list[tuple[int, int]]:
    """Ranges with the blank lines between them counted as held (excerpts are cut at text)."""
    doc = next((d for d in case.docs if d.path == path), None)
    if doc is None:
        return ranges
    out = []
    for a, b in ranges:
        while a > 1 and not doc.lines[a - 2].strip():
            a -= 1
        while b < len(doc.lines) and not doc.lines[b].strip():
            b += 1
        out.append((a, b))
    return out


def evaluate(cases: Sequence[Case], doc_w: Mapping[str, float], sec_w: Mapping[str, float]) -> tuple[float, int, int]:
    hits = total = 0
    soft = 0.0
    for c in cases:
        h, s = judge(c, doc_w, sec_w)
        hits += h
        soft += s
        total += len(c.required)
    return hits + RANK_TERM * soft / max(1, total), hits, total


# The shape of the choice (``weights`` constants), searched on small grids beside the weights.
SHAPE = {
    "WHOLE_DOC_BYTES": (4000, 6000, 8000),
    "WHOLE_FOCUS": (0.0, 0.1, 0.2, 0.3, 0.5),
    "MAX_DOCS": (4, 6, 8, 10),
    "DOC_CUT": (0.0, 0.2, 0.3, 0.4),
    "SECTION_CUT": (0.3, 0.4, 0.5, 0.6, 0.7),
    "SECTIONS_PER_DOC": (2, 3, 4, 6),
    "DOC_BYTES": (3000, 4500, 6000, 9000, 24000),
}
# Not fitted: the convention slots (how tests are written, how a change is recorded) are what the
# capsule promises every task, whatever a dozen repositories' cases happened to ask for.


def _shape() -> dict[str, float]:
    from gitpilot.context import weights

    return {k: getattr(weights, k) for k in SHAPE}


def _set_shape(shape: Mapping[str, float]) -> None:
    from gitpilot.context import weights

    for k, v in shape.items():
        setattr(weights, k, v)


def thin_kinds(cases: Sequence[Case]) -> frozenset[str]:
    """The document kinds (``kind:<k>`` weights) found in fewer than ``MIN_KIND_REPOS`` of the
    repositories of ``cases``: a prior fitted on two repositories' documents states what those two
    are like, not what the kind is. Their weights keep the value the table gives them."""
    seen: dict[str, set[str]] = {}
    for c in cases:
        for d in c.docs:
            seen.setdefault(f"kind:{d.kind}", set()).add(c.repo)
    from gitpilot.context.weights import DOC

    return frozenset(k for k in DOC if k.startswith("kind:") and len(seen.get(k, ())) < MIN_KIND_REPOS)


def ascent(cases: Sequence[Case], doc_w: dict[str, float], sec_w: dict[str, float], rounds: int,
           shape: Mapping[str, float] | None = None) -> tuple[dict[str, float], dict[str, float], dict[str, float]]:
    """Coordinate ascent from the given weights; the kinds ``thin_kinds`` names are not moved."""
    frozen = thin_kinds(cases)
    doc_w = {k: (max(v, 0.0) if k in EVIDENCE else v) for k, v in doc_w.items()}
    sec_w = {k: (max(v, 0.0) if k in EVIDENCE else v) for k, v in sec_w.items()}
    form = dict(shape or _shape())
    _set_shape(form)
    best = evaluate(cases, doc_w, sec_w)[0]
    for _ in range(rounds):
        improved = False
        for table in (doc_w, sec_w):
            for key in list(table):
                if key in frozen:
                    continue
                start = table[key]
                for step in STEPS:
                    if key in EVIDENCE and start + step < 0:
                        continue
                    table[key] = round(start + step, 3)
                    obj = evaluate(cases, doc_w, sec_w)[0]
                    if obj > best + 1e-9:
                        best, start, improved = obj, table[key], True
                table[key] = start
        for key, values in SHAPE.items():
            start = form[key]
            for value in values:
                form[key] = value
                _set_shape(form)
                obj = evaluate(cases, doc_w, sec_w)[0]
                if obj > best + 1e-9:
                    best, start, improved = obj, value, True
            form[key] = start
            _set_shape(form)
        if not improved:
            break
    return doc_w, sec_w, form


def search(cases: Sequence[Case], doc_w: dict[str, float], sec_w: dict[str, float], rounds: int,
           shape: Mapping[str, float] | None = None, kicks: int = 0
           ) -> tuple[dict[str, float], dict[str, float], dict[str, float]]:
    """``ascent``, then ``kicks`` times: move ``KICK_KEYS`` weights at random (a fixed seed: the
    same cases give the same table) and climb again from there, keeping what scores higher. One
    weight at a time stops where no single step helps; a kick finds the optima that need two."""
    doc_w, sec_w, form = ascent(cases, doc_w, sec_w, rounds, shape)  # (it leaves its shape in force)
    best = evaluate(cases, doc_w, sec_w)[0]
    frozen = thin_kinds(cases)
    keys = [(0, k) for k in doc_w if k not in frozen] + [(1, k) for k in sec_w]
    rng = random.Random(KICK_SEED)
    for _ in range(kicks):
        tables = (dict(doc_w), dict(sec_w))
        for t, key in rng.sample(keys, min(KICK_KEYS, len(keys))):
            value = tables[t][key] + rng.choice(STEPS)
            tables[t][key] = max(value, 0.0) if key in EVIDENCE else value
        d2, s2, f2 = ascent(cases, tables[0], tables[1], rounds, form)
        obj = evaluate(cases, d2, s2)[0]
        if obj > best + 1e-9:
            best, doc_w, sec_w, form = obj, d2, s2, f2
        _set_shape(form)
    return doc_w, sec_w, form


def write_weights(doc_w: Mapping[str, float], sec_w: Mapping[str, float], shape: Mapping[str, float]) -> None:
    text = WEIGHTS_PY.read_text("utf-8")
    begin, end = text.index("# FIT: shape begin"), text.index("# FIT: shape end")
    old = text[begin:end].splitlines()
    new = [old[0]]
    for line in old[1:]:
        key = line.split("=", 1)[0].strip()
        if key in shape:
            comment = line.split("#", 1)[1] if "#" in line else ""
            value = shape[key]
            shown = f"{value:g}" if isinstance(value, float) else str(value)
            line = f"{key} = {shown}" + (f"  #{comment}" if comment else "")
        new.append(line)
    text = text[:begin] + "\n".join(new) + "\n" + text[end:]
    begin = text.index("# FIT: begin")
    end = text.index("# FIT: end")
    body = ["# FIT: begin (written by bench/fit.py)", "DOC: dict[str, float] = {"]
    body += [f"    {json.dumps(k)}: {v:g}," for k, v in doc_w.items()]
    body += ["}", "SECTION: dict[str, float] = {"]
    body += [f"    {json.dumps(k)}: {v:g}," for k, v in sec_w.items()]
    body += ["}", ""]
    WEIGHTS_PY.write_text(text[:begin] + "\n".join(body) + text[end:], "utf-8")


def main(argv: list[str]) -> int:
    from gitpilot.context import weights

    ap = argparse.ArgumentParser(prog="python -m bench fit")
    ap.add_argument("--mirror-root")
    ap.add_argument("--work", default=str(Path(tempfile.gettempdir()) / "git-pilot-corpus"))
    ap.add_argument("--rounds", type=int, default=8)
    ap.add_argument("--kicks", type=int, default=KICKS, help="restarts from the best table with weights moved at random")
    ap.add_argument("--loro", action="store_true")
    ap.add_argument("--write", action="store_true")
    ap.add_argument("--jobs", type=int, default=1, help="held-out folds fitted at once (--loro)")
    ap.add_argument("--cases", action="append",
                    help="a cases file, again for more than one (default: bench/corpus/cases.toml)")
    ap.add_argument("--agent", help="the agent the capsules are for (default: the configured default)")
    ap.add_argument("--from-zero", action="store_true", help="start from plain weights, not the current table")
    args = ap.parse_args(argv)
    mirrors = corpus.mirror_root(args.mirror_root)
    if mirrors is None:
        print("fit: no mirrors (give --mirror-root DIR or GIT_PILOT_CORPUS_MIRRORS)")
        return 1
    work = Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    cases = [c for f in (args.cases or [str(corpus.CASES)])
             for c in load(mirrors, work, agent=args.agent, cases_file=Path(f))]
    if args.from_zero:
        doc0 = {k: (1.0 if not k.startswith("kind:") and k not in ("scoped", "applies") else 0.0) for k in weights.DOC}
        doc0.update({k: weights.DOC[k] for k in thin_kinds(cases)})  # not fitted: as the table states them
        sec0 = {k: (1.0 if k.startswith("s_") else 0.0) for k in weights.SECTION}
    else:
        doc0, sec0 = dict(weights.DOC), dict(weights.SECTION)
    _, hits, total = evaluate(cases, doc0, sec0)
    print(f"start: {hits}/{total} = {hits / total:.1%} (outside instruction files, by line coverage)")
    print(f"kept as the table gives them (too few repositories have such documents): {sorted(thin_kinds(cases))}")
    shape0 = _shape()
    doc_w, sec_w, shape = search(cases, doc0, sec0, args.rounds, shape0, args.kicks)
    _, hits, total = evaluate(cases, doc_w, sec_w)
    print(f"fit on all: {hits}/{total} = {hits / total:.1%}")
    print(json.dumps({"DOC": doc_w, "SECTION": sec_w, "shape": shape}))
    if args.write:
        write_weights(doc_w, sec_w, shape)
        print(f"written to {WEIGHTS_PY.relative_to(ROOT)}")
    if args.loro:
        repos = sorted({c.repo for c in cases})
        folds = [(cases, name, doc0, sec0, args.rounds, shape0, args.kicks) for name in repos]
        if args.jobs > 1:
            import multiprocessing

            with multiprocessing.get_context("fork").Pool(args.jobs) as pool:
                held = pool.map(_held_out, folds, chunksize=1)
        else:
            held = [_held_out(f) for f in folds]
        for name, (h, t) in zip(repos, held, strict=True):
            print(f"  held out {name}: {h}/{t}", flush=True)
        got = sum(h for h, _ in held)
        print(f"leave-one-repository-out: {got}/{total} = {got / total:.1%}")
    return 0


def _held_out(fold: tuple[Sequence[Case], str, dict[str, float], dict[str, float], int, dict[str, float], int]
              ) -> tuple[int, int]:
    """Fit on every repository but ``name``, score ``name``: (held, required)."""
    cases, name, doc0, sec0, rounds, shape0, kicks = fold
    train = [c for c in cases if c.repo != name]
    test = [c for c in cases if c.repo == name]
    dw, sw, form = search(train, doc0, sec0, rounds, shape0, kicks)
    _set_shape(form)
    _, h, t = evaluate(test, dw, sw)
    _set_shape(shape0)
    return h, t
