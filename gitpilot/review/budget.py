"""Review budgets: how many Codex review rounds a change warrants, and why.

The change is the diff (renames detected) from the merge base with the base branch to the
checked state: the worktree tree id (commits, staged and unstaged edits, untracked files that
are not ignored), or a commit's tree for the notes the git hooks record. Classes:

- ``empty``: nothing changed, 0 rounds;
- ``docs``: documentation only (``docs_extensions``, prose formats: ``.md .markdown .txt .rst .adoc``)
  and nothing high-risk: ``docs_only_rounds`` (0);
- ``small``: at most ``small_max_files`` (3) files and ``small_max_lines`` (80) changed lines, no
  binaries, nothing high-risk: ``small_rounds``;
- ``normal``: anything else: ``normal_rounds``;
- ``high-risk`` (see ``risk.py``): ``high_risk_rounds`` (unset: ``max_rounds``).

``max_rounds`` caps every class; ``adaptive = false`` (or ``leanloop.enabled = false``, the plain
v0.4 behaviour) gives every change ``max_rounds``. A
config that would let a code change skip review (a ``*_rounds`` below 1) is refused.
``record_for_commit`` is what the post-commit, post-rewrite and pre-push hooks call: it is
cheap to import (stdlib only at import time) and skips a commit whose note is current.
"""

from __future__ import annotations

import json
import zlib

from gitpilot.errors import PilotError

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing and dataclasses cost import time on the hooks' path
    from typing import Any

    from gitpilot.config import Config
    from gitpilot.repo import FileChange, Repo

REVIEW_REF = "refs/notes/pilot/review"
EMPTY_TREE = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"
SMALL_FILES = 3
SMALL_LINES = 80
DOC_EXTENSIONS = (".md", ".markdown", ".txt", ".rst", ".adoc")
MAX_REASONS = 12


class Rules:
    """The ``[reviewer]`` settings (v0.4's ``reviewer.adaptive`` block), validated."""

    __slots__ = ("adaptive", "max_rounds", "docs_only_rounds", "small_rounds", "normal_rounds",
                 "high_risk_rounds", "small_max_files", "small_max_lines", "docs_extensions",
                 "high_risk_paths", "high_risk_keywords", "use_default_high_risk")

    def __init__(self, adaptive: bool = True, max_rounds: int = 2, small_rounds: int = 1,
                 normal_rounds: int = 2, high_risk_rounds: int = 2, high_risk_paths: tuple[str, ...] = (),
                 high_risk_keywords: tuple[str, ...] = (), docs_only_rounds: int = 0,
                 small_max_files: int = SMALL_FILES, small_max_lines: int = SMALL_LINES,
                 docs_extensions: tuple[str, ...] = DOC_EXTENSIONS, use_default_high_risk: bool = True) -> None:
        self.adaptive = adaptive
        self.max_rounds = max_rounds
        self.docs_only_rounds = docs_only_rounds
        self.small_rounds = small_rounds
        self.normal_rounds = normal_rounds
        self.high_risk_rounds = high_risk_rounds
        self.small_max_files = small_max_files
        self.small_max_lines = small_max_lines
        self.docs_extensions = docs_extensions
        self.high_risk_paths = high_risk_paths
        self.high_risk_keywords = high_risk_keywords
        self.use_default_high_risk = use_default_high_risk

    def fingerprint(self) -> str:
        """A short checksum of the rules (stable across runs: zlib, never ``hash()``)."""
        values = {name: getattr(self, name) for name in self.__slots__}
        return f"{zlib.crc32(json.dumps(values, sort_keys=True).encode('utf-8')):08x}"

    def is_doc(self, path: str) -> bool:
        return path.lower().endswith(self.docs_extensions)


def rules_from_config(cfg: Config) -> Rules:
    """The validated rules. The config refuses what would let a code change skip review (a round
    count below 1, code counted as documentation); this checks the rounds again, whatever built ``cfg``."""
    where = str(cfg.path) if cfg.path is not None else "the configuration"
    rounds = {name: int(cfg.get(f"reviewer.adaptive.{name}"))
              for name in ("small_rounds", "normal_rounds", "high_risk_rounds")}
    rounds["max_rounds"] = int(cfg.get("reviewer.max_rounds"))
    for key, value in rounds.items():
        if value < 1:
            raise PilotError(f"{where}: reviewer.{key} = {value} would let a code change skip review; "
                             "it must be at least 1 (documentation-only changes already get 0 rounds)")
    return Rules(adaptive=bool(cfg.get("reviewer.adaptive.enabled")) and bool(cfg.get("leanloop.enabled")),
                 docs_only_rounds=max(0, int(cfg.get("reviewer.adaptive.docs_only_rounds"))),
                 small_max_files=int(cfg.get("reviewer.adaptive.small_max_files")),
                 small_max_lines=int(cfg.get("reviewer.adaptive.small_max_lines")),
                 docs_extensions=tuple(e.lower() for e in cfg.get("reviewer.adaptive.docs_extensions")),
                 high_risk_paths=tuple(cfg.get("reviewer.adaptive.high_risk_paths")),
                 high_risk_keywords=tuple(cfg.get("reviewer.adaptive.high_risk_keywords")),
                 use_default_high_risk=bool(cfg.get("reviewer.adaptive.use_default_high_risk")), **rounds)


class Budget:
    """A change's review budget: class, rounds, and the reasons in words."""

    __slots__ = ("base", "merge_base", "tree", "cls", "rounds", "max_rounds", "adaptive", "reasons", "files",
                 "changed_lines", "binaries", "high_risk")

    def __init__(self, base: str, merge_base: str | None, tree: str, cls: str, rounds: int, max_rounds: int,
                 adaptive: bool, reasons: tuple[str, ...], files: int = 0, changed_lines: int = 0,
                 binaries: tuple[str, ...] = (), high_risk: tuple[str, ...] = ()) -> None:
        self.base = base
        self.merge_base = merge_base
        self.tree = tree
        self.cls = cls
        self.rounds = rounds
        self.max_rounds = max_rounds
        self.adaptive = adaptive
        self.reasons = reasons
        self.files = files
        self.changed_lines = changed_lines
        self.binaries = binaries
        self.high_risk = high_risk

    def __repr__(self) -> str:
        return f"Budget({self.cls}, {self.rounds} round(s) against {self.base})"

    def to_json(self) -> dict[str, Any]:
        return {"base": self.base, "merge_base": self.merge_base, "tree": self.tree, "class": self.cls,
                "rounds": self.rounds, "max_rounds": self.max_rounds, "adaptive": self.adaptive,
                "reasons": list(self.reasons), "files": self.files, "changed_lines": self.changed_lines,
                "binaries": list(self.binaries), "high_risk": list(self.high_risk)}


# -- the base branch ------------------------------------------------------------------------
def resolve_base(repo: Repo, cfg: Config, base: str | None = None) -> tuple[str, str]:
    """(name, commit) of the base branch: ``--base``, else ``base_branch``, else
    ``Repo.default_branch`` (origin/HEAD, else main or master)."""
    if base:
        return base, _commit_of(repo, base, f"no base branch {base!r} here (--base)")
    configured = str(cfg.get("base_branch") or "").strip()
    if configured:
        return configured, _commit_of(repo, configured, f"base_branch = {configured!r} in the config "
                                      "names nothing here; fix it or pass --base")
    name = repo.default_branch()
    commit = repo.rev_parse(f"{name}^{{commit}}") if name else None
    if name is None or commit is None:
        raise PilotError("no base branch found (no origin/HEAD, main or master): set base_branch in "
                         ".gitpilot.toml or pass --base")
    return name, commit


def _commit_of(repo: Repo, rev: str, message: str) -> str:
    commit = repo.rev_parse(f"{rev}^{{commit}}")
    if commit is None:
        raise PilotError(message)
    return commit


def merge_base(repo: Repo, base_commit: str, commit: str | None) -> str | None:
    if commit is None:
        return None
    out = repo.git_proc("merge-base", base_commit, commit)
    text = out.stdout.decode().strip()
    return text if out.returncode == 0 and text else None


# -- the budget -------------------------------------------------------------------------------
def compute_budget(repo: Repo, base: str | None = None) -> Budget:
    """The budget of the checked state (the working tree as it is) against the base branch."""
    from gitpilot.config import load

    cfg = load(repo.workdir)
    rules = rules_from_config(cfg)
    name, base_commit = resolve_base(repo, cfg, base)
    mb = merge_base(repo, base_commit, repo.head())
    return budget_of(repo, rules, name, mb, repo.worktree_tree_id())


def budget_of(repo: Repo, rules: Rules, base_name: str, mb: str | None, tree: str) -> Budget:
    """The budget of ``tree`` against the merge base ``mb`` (None: no common history)."""
    old = repo.commit_tree_of(mb) if mb is not None else None
    from gitpilot.redact import is_credential_filename

    # Line texts are only scanned in non-documentation files: only those are kept. A file
    # named like a credential store is judged by its name alone; its lines are never kept.
    changes = [] if old == tree else repo.diff_stats(
        old, tree, lines_for=lambda path: not rules.is_doc(path) and not is_credential_filename(path))
    return classify(changes, rules, base_name, mb, tree, _kubernetes_manifests(repo, changes, rules, old, tree))


_MANIFEST_HEAD = 1 << 16  # bytes of a YAML file read to tell a Kubernetes manifest


def _kubernetes_manifests(repo: Repo, changes: list[FileChange], rules: Rules, old: str | None,
                          tree: str) -> frozenset[str]:
    """Changed YAML files (by either name) that declare a Kubernetes object, wherever they live:
    a manifest's changed lines rarely include its ``kind:``, so the file itself is read."""
    from gitpilot.review import risk

    if not rules.use_default_high_risk:
        return frozenset()
    found = set()
    for c in changes:
        for side, path in ((tree, c.new_path), (old, c.old_path)):
            if side is None or path is None or not path.lower().endswith((".yaml", ".yml")) or c.binary:
                continue
            if risk.path_rule(path, rules.high_risk_paths, docs=rules.docs_extensions) is not None:
                continue  # high-risk already
            oid = repo.rev_parse(f"{side}:{path}")
            data = repo.read_blob(oid) if oid is not None else None
            if data is not None and risk.is_kubernetes_manifest(path, data[:_MANIFEST_HEAD].decode("utf-8", "replace")):
                found.add(path)
    return frozenset(found)


def _paths(change: FileChange) -> list[str]:
    return sorted({p for p in (change.old_path, change.new_path) if p is not None})


def _shown(change: FileChange) -> str:
    if change.old_path and change.new_path and change.old_path != change.new_path:
        return f"{change.old_path} -> {change.new_path}"
    return str(change.new_path or change.old_path)


def classify(changes: list[FileChange], rules: Rules, base_name: str, mb: str | None, tree: str,
             kubernetes: frozenset[str] = frozenset()) -> Budget:
    """Class, rounds and reasons for a list of changed files (deterministic: sorted by path);
    ``kubernetes``: the changed paths whose content is a Kubernetes manifest."""
    from gitpilot.review import risk

    changes = sorted(changes, key=lambda c: (_shown(c), c.status))
    lines = sum(c.added + c.deleted for c in changes)
    binaries = tuple(_shown(c) for c in changes if c.binary)
    findings: list[risk.Finding] = []
    for c in changes:
        for path in _paths(c):
            rule = risk.path_rule(path, rules.high_risk_paths, rules.use_default_high_risk, rules.docs_extensions)
            if rule is None and path in kubernetes:
                rule = "infrastructure: a Kubernetes manifest"
            if rule is not None:
                findings.append(risk.Finding(_shown(c), 0, rule))
                break
        else:
            if not c.binary and len(findings) < MAX_REASONS:  # enough reasons: the class is settled
                hit = risk.line_findings(str(c.new_path or c.old_path), c.lines, rules.high_risk_keywords,
                                         rules.use_default_high_risk, rules.docs_extensions)
                if hit is not None:
                    findings.append(hit)
    renamed = sum(1 for c in changes if c.status == "renamed")
    size = (f"{len(changes)} file(s) changed against {base_name}"
            + (f" ({renamed} renamed)" if renamed else "")
            + f", {lines} changed line(s), {len(binaries)} binary")
    reasons: list[str] = [size] if changes else []
    if not mb:
        reasons.append(f"no common history with {base_name}: every file counts as added")
    docs_only = bool(changes) and not binaries and all(rules.is_doc(p) for c in changes for p in _paths(c))
    if not changes:
        cls, class_rounds = "empty", 0
        reasons.append(f"nothing changed against {base_name}: nothing to review")
    elif findings:
        cls, class_rounds = "high-risk", rules.high_risk_rounds
        reasons.extend(f.reason() for f in findings[:MAX_REASONS])
        if len(findings) > MAX_REASONS:
            reasons.append(f"... and at least {len(findings) - MAX_REASONS} more high-risk file(s)")
    elif docs_only:
        cls, class_rounds = "docs", rules.docs_only_rounds
        reasons.append(f"documentation only ({' '.join(rules.docs_extensions)}) and nothing high-risk")
    elif len(changes) <= rules.small_max_files and lines <= rules.small_max_lines and not binaries:
        cls, class_rounds = "small", rules.small_rounds
        reasons.append(f"small and low-risk: at most {rules.small_max_files} files and {rules.small_max_lines} "
                       "changed lines, no binaries")
    else:
        cls, class_rounds = "normal", rules.normal_rounds
        reasons.extend(_not_small(len(changes), lines, binaries, rules))
    rounds, why = _rounds(cls, class_rounds, rules)
    reasons.append(why)
    return Budget(base_name, mb, tree, cls, rounds, rules.max_rounds, rules.adaptive, tuple(reasons),
                  len(changes), lines, binaries, tuple(f.reason() for f in findings))


def _not_small(files: int, lines: int, binaries: tuple[str, ...], rules: Rules) -> list[str]:
    out = []
    if files > rules.small_max_files:
        out.append(f"not small: {files} files (more than {rules.small_max_files})")
    if lines > rules.small_max_lines:
        out.append(f"not small: {lines} changed lines (more than {rules.small_max_lines})")
    if binaries:
        shown = ", ".join(binaries[:5]) + (f" and {len(binaries) - 5} more" if len(binaries) > 5 else "")
        out.append(f"not small: binary file(s): {shown}")
    return out


def _rounds(cls: str, class_rounds: int, rules: Rules) -> tuple[int, str]:
    if cls == "empty":
        return 0, "budget: 0 rounds"
    if not rules.adaptive:
        return rules.max_rounds, (f"budget: {rules.max_rounds} round(s): adaptive review is off "
                                  "(reviewer.adaptive or leanloop.enabled is false: max_rounds)")
    if cls == "docs" and class_rounds == 0:
        return 0, "budget: 0 rounds"
    key = {"docs": "docs_only_rounds", "small": "small_rounds", "normal": "normal_rounds",
           "high-risk": "high_risk_rounds"}[cls]
    rounds = min(class_rounds, rules.max_rounds)
    capped = f", capped by max_rounds {rules.max_rounds}" if class_rounds > rules.max_rounds else ""
    return rounds, f"budget: {rounds} round(s) ({key} {class_rounds}{capped})"


# -- notes on commits (the git hooks) ---------------------------------------------------------
def note_body(budget: Budget, rules: Rules) -> bytes:
    body = {"base": budget.base, "merge_base": budget.merge_base, "class": budget.cls,
            "rounds": budget.rounds, "reasons": list(budget.reasons), "rules": rules.fingerprint()}
    return (json.dumps(body, sort_keys=True, ensure_ascii=False) + "\n").encode("utf-8")


def read_note(repo: Repo, commit: str) -> dict[str, Any] | None:
    from gitpilot.store.notes import NotesStore

    data = NotesStore(repo, REVIEW_REF).read(commit)
    if not data:
        return None
    try:
        body = json.loads(data)
    except ValueError:
        return None
    return body if isinstance(body, dict) else None


def record_for_commit(repo: Repo, commit: str) -> Budget | None:
    """Record ``commit``'s budget as a note in refs/notes/pilot/review; None when nothing was written.

    Nothing is written when the note is current (same base, merge base and rules: a commit's tree
    never changes, so nothing else can change its budget), or when there is no base branch or the
    review config is refused: the hooks (pre-push runs in the foreground) must never fail for that.
    """
    from gitpilot.config import load
    from gitpilot.store.notes import NotesStore

    try:
        commit = _commit_of(repo, commit, f"no such commit: {commit}")
        cfg = load(repo.workdir)
        rules = rules_from_config(cfg)
        name, base_commit = resolve_base(repo, cfg)
    except PilotError:
        return None  # no base branch, or a config `review-budget` refuses: a hook records nothing, quietly
    mb = merge_base(repo, base_commit, commit)
    old = read_note(repo, commit)
    if old is not None and (old.get("base"), old.get("merge_base"), old.get("rules")) == \
            (name, mb, rules.fingerprint()):
        return None
    tree = repo.commit_tree_of(commit)
    if tree is None:
        raise PilotError(f"no tree for commit {commit}")
    budget = budget_of(repo, rules, name, mb, tree)
    NotesStore(repo, REVIEW_REF).put({commit: note_body(budget, rules)},
                                     f"git pilot: review budget of {commit[:12]}")
    return budget
