"""Configuration: ``.gitpilot.toml`` (or a v0.4 ``.autopilot/config.json``), validated once.

The only module that imports tomlkit (for edits that keep comments and order); reads use the
stdlib ``tomllib``, which is cheap enough for hot paths. Every key is optional; ``SCHEMA``
holds each key's type and default, and is the one place a capability adds its keys.
Broken TOML names file, line and column; a wrong type names file, line and key; unknown
keys are collected as warnings.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from pathlib import Path

from gitpilot.errors import PilotError
from gitpilot.fileio import keep, read_kept

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing costs import time on hot paths
    from typing import Any

TOML_NAME = ".gitpilot.toml"
LEGACY_NAME = ".autopilot/config.json"

# key -> (type, default). Types: bool, int, number, str, list[str], dict, or a tuple of
# allowed string values.
SCHEMA: dict[str, tuple[Any, Any]] = {
    "leanloop.enabled": ("bool", True),
    "leanloop.checks.timeout_minutes": ("number", 30),
    "leanloop.checks.failure_excerpt_lines": ("int", 60),
    "leanloop.checks.failure_excerpt_bytes": ("int", 6000),
    "leanloop.checks.reuse_unchanged_passes": ("bool", True),
    "leanloop.checks.keep_runs": ("int", 10),
    "base_branch": ("str", ""),
    "share.trust": ("list[str]", []),
    "share.push": ("bool", False),
    "share.gate": ("list[str]", []),
    "leanloop.context.files": ("list[str]", ["*.md", "*.mdx"]),
    "leanloop.context.instruction_files": ("list[str]", ["CLAUDE.md", "AGENTS.md"]),
    "leanloop.context.rule_files": ("list[str]", []),
    "leanloop.context.always_include": ("list[str]", []),
    "leanloop.context.always_include_headings": ("list[str]", [
        "safety", "security", "secrets", "credentials", "policy", "guardrails", "constraints",
        "never", "do not", "must not", "forbidden", "human gates"]),
    "leanloop.context.max_excerpt_bytes": ("int", 27000),
    "leanloop.context.max_section_bytes": ("int", 8000),
    "safety.human_gates": ("list[str]", []),
    "safety.notes": ("str", ""),
    "agent.default": ("str", "claude"),
    "agent.mode": (("auto", "interactive", "print", "background"), "auto"),
    "quota.auto_resume": ("bool", False),
    "quota.grace_minutes": ("number", 2),
    "optimizer.loop_detection": ("bool", True),
    "optimizer.loop_threshold": ("int", 3),
    "optimizer.loop_notice_after": ("int", 2),
    "optimizer.loop_learn_turns": ("int", 10),
    "optimizer.learn": ("bool", False),
    "optimizer.sourcemap_inject": ("bool", False),
    "optimizer.sourcemap_budget": ("int", 6000),
    "optimizer.prune_min_sessions": ("int", 5),
    # Adaptive review (gitpilot/review), the v0.4 ``reviewer.adaptive`` block: unset max_rounds is
    # 3 for a v0.4 config; unset high_risk_rounds is max_rounds (see ``Config.get``).
    "reviewer.max_rounds": ("int", 2),
    "reviewer.adaptive.enabled": ("bool", True),
    "reviewer.adaptive.docs_only_rounds": ("int", 0),
    "reviewer.adaptive.small_rounds": ("int", 1),
    "reviewer.adaptive.normal_rounds": ("int", 2),
    "reviewer.adaptive.high_risk_rounds": ("int", 2),
    "reviewer.adaptive.small_max_files": ("int", 3),
    "reviewer.adaptive.small_max_lines": ("int", 80),
    "reviewer.adaptive.docs_extensions": ("list[str]", [".md", ".markdown", ".txt", ".rst", ".adoc"]),
    "reviewer.adaptive.high_risk_paths": ("list[str]", []),
    "reviewer.adaptive.high_risk_keywords": ("list[str]", []),
    "reviewer.adaptive.use_default_high_risk": ("bool", True),
    "planner.enabled": ("bool", False),
}

# Other spellings of a key, accepted as they are: ``reviewer.adaptive = false`` (v0.4's
# ``"adaptive": false``) and the flat ``[reviewer]`` keys earlier versions documented.
ALIASES: dict[str, str] = {
    "reviewer.adaptive": "reviewer.adaptive.enabled",
    "reviewer.small_rounds": "reviewer.adaptive.small_rounds",
    "reviewer.normal_rounds": "reviewer.adaptive.normal_rounds",
    "reviewer.high_risk_rounds": "reviewer.adaptive.high_risk_rounds",
    "reviewer.high_risk_paths": "reviewer.adaptive.high_risk_paths",
    "reviewer.high_risk_keywords": "reviewer.adaptive.high_risk_keywords",
}

# Defaults that differ for a v0.4 ``.autopilot/config.json`` (v0.4 reviewed up to 3 rounds), and
# keys whose unset value is another key's value.
V04_DEFAULTS: dict[str, Any] = {"reviewer.max_rounds": 3}
FOLLOWS: dict[str, str] = {"reviewer.adaptive.high_risk_rounds": "reviewer.max_rounds"}

# Every number must be finite and at least its minimum here; a number not listed must be positive.
MINIMUM: dict[str, int] = {
    "quota.grace_minutes": 0,
    "optimizer.loop_notice_after": 0,
    "reviewer.adaptive.docs_only_rounds": 0,
    "reviewer.adaptive.small_max_files": 0,
    "reviewer.adaptive.small_max_lines": 0,
}
# Round counts a code change gets: below 1 it would skip review, which no config may allow.
REVIEW_ROUNDS = frozenset({"reviewer.max_rounds", "reviewer.adaptive.small_rounds",
                           "reviewer.adaptive.normal_rounds", "reviewer.adaptive.high_risk_rounds"})
# What may count as documentation (0 review rounds): prose formats only, never code or config.
PROSE_EXTENSIONS = (".md", ".markdown", ".mdown", ".mkd", ".txt", ".text", ".rst", ".adoc", ".asciidoc",
                    ".org", ".textile", ".rdoc")

# Keys of each [[check]] table.
CHECK_SCHEMA: dict[str, tuple[Any, Any]] = {
    "name": ("str", None),
    "run": ("str", None),
    "timeout_minutes": ("number", None),
    "env": ("list[str]", []),
    "reuse": (("same-platform", "any-platform"), "same-platform"),
    "files": ("list[str]", []),
}

_TYPE_WORDS = {
    "bool": "true or false",
    "int": "a whole number",
    "number": "a number",
    "str": "a string",
    "list[str]": "a list of strings",
    "dict": "a table",
}


class CheckSpec:
    """One configured check."""

    __slots__ = ("name", "run", "timeout_minutes", "env", "reuse", "index", "files")

    def __init__(self, name: str, run: str, timeout_minutes: float | None = None, env: tuple[str, ...] = (),
                 reuse: str = "same-platform", index: int = 0, files: tuple[str, ...] = ()) -> None:
        self.name = name
        self.run = run
        self.timeout_minutes = timeout_minutes
        self.env = tuple(env)
        self.reuse = reuse
        self.index = index  # 1-based position in the config
        # Globs (git's ``:(glob)`` pathspecs; a leading ``!`` excludes): when set, the check's
        # results are keyed by the tree of the matching files only. Empty: the whole tree.
        self.files = tuple(files)

    def _key(self) -> tuple[object, ...]:
        return (self.name, self.run, self.timeout_minutes, self.env, self.reuse, self.index, self.files)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, CheckSpec) and self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def __repr__(self) -> str:
        return f"CheckSpec(name={self.name!r}, run={self.run!r})"


class Config:
    """The validated configuration of one repository."""

    __slots__ = ("values", "checks", "source", "path", "warnings", "raw")

    def __init__(self, values: Mapping[str, Any], checks: tuple[CheckSpec, ...] = (), source: str = "default",
                 path: Path | None = None, warnings: tuple[str, ...] = (),
                 raw: Mapping[str, Any] | None = None) -> None:
        self.values = values
        self.checks = tuple(checks)
        self.source = source  # "toml", "v0.4" or "default"
        self.path = path
        self.warnings = tuple(warnings)
        self.raw = raw if raw is not None else {}

    def get(self, key: str) -> Any:
        """The value in force: as set, else the default (a v0.4 config's own, or the key it follows)."""
        key = ALIASES.get(key, key)
        if key in self.values:
            return self.values[key]
        if key not in SCHEMA:
            raise KeyError(f"unknown config key {key}")
        if key in FOLLOWS:
            return self.get(FOLLOWS[key])
        default = V04_DEFAULTS[key] if self.source == "v0.4" and key in V04_DEFAULTS else SCHEMA[key][1]
        return list(default) if isinstance(default, list) else default

    def is_set(self, key: str) -> bool:
        return ALIASES.get(key, key) in self.values

    def check(self, selector: str) -> CheckSpec:
        """A check by name or 1-based number."""
        for c in self.checks:
            if c.name == selector or str(c.index) == selector:
                return c
        names = ", ".join(c.name for c in self.checks) or "none configured"
        raise PilotError(f"no check named {selector!r} (checks: {names})")


def load(root: Path, cache: Path | None = None) -> Config:
    """Load the configuration of the worktree at ``root``.

    ``cache``: a file where the parsed document is kept with the exact bytes it came from, so
    a hot path with an unchanged config skips the TOML parser (and its imports).
    """
    toml_path = root / TOML_NAME
    try:
        text = toml_path.read_bytes()
    except FileNotFoundError:
        if toml_path.is_symlink():  # there is a config, but it leads nowhere: never fall back silently
            raise PilotError(f"{toml_path}: a symlink to {os.readlink(toml_path)}, which does not exist") from None
        legacy = root / LEGACY_NAME
        try:
            ltext = legacy.read_bytes()
        except FileNotFoundError:
            return Config(values={})
        return _from_legacy(legacy, ltext)
    except IsADirectoryError as exc:
        raise PilotError(f"{toml_path}: is a directory, not a config file") from exc
    return parse_toml(toml_path, text, cache)


def _cached_doc(cache: Path | None, data: bytes) -> dict[str, Any] | None:
    if cache is None:
        return None
    kept = read_kept(cache)
    if isinstance(kept, tuple) and len(kept) == 2 and kept[0] == data and isinstance(kept[1], dict):
        return kept[1]
    return None


def _keep_doc(cache: Path | None, data: bytes, doc: dict[str, Any]) -> None:
    if cache is None:
        return
    keep(cache, (data, doc))  # a TOML date or time is not marshalable: not cached


def parse_toml(path: Path, data: bytes, cache: Path | None = None) -> Config:
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise PilotError(f"{path}: not UTF-8 text (byte {exc.start})") from exc
    doc = _cached_doc(cache, data)
    if doc is not None:
        return _validate(doc, path, text, "toml")
    import re
    import tomllib

    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        m = re.search(r"\(at line (\d+), column (\d+)\)", str(exc))
        lines = text.split("\n")
        # tomllib says "at end of document" without a position: that is the last line's end.
        where = f"{m.group(1)}:{m.group(2)}" if m else f"{len(lines)}:{len(lines[-1]) + 1}"
        msg = re.sub(r"\s*\(at (?:line \d+, column \d+|end of document)\)", "", str(exc))
        raise PilotError(f"{path}:{where}: invalid TOML: {msg}") from exc
    config = _validate(doc, path, text, "toml")
    _keep_doc(cache, data, doc)  # only a document that validated is kept
    return config


def _camel_to_snake(name: str) -> str:
    import re

    return re.sub(r"(?<=[a-z0-9])([A-Z])", lambda m: "_" + m.group(1).lower(), name)


def _snake_to_camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(w[:1].upper() + w[1:] for w in rest)


def _snake_keys(obj: Any) -> Any:
    # JSON null means "not set" and has no TOML form: such keys and list items are left out.
    if isinstance(obj, dict):
        return {_camel_to_snake(str(k)): _snake_keys(v) for k, v in obj.items() if v is not None}
    if isinstance(obj, list):
        return [_snake_keys(v) for v in obj if v is not None]
    return obj


def check_table(command: str) -> dict[str, str]:
    """A v0.4 plain-string check as a check table: the command is its run and (slashes aside) its name."""
    return {"name": " ".join(command.split()).replace("/", "-"), "run": command}


def legacy_to_doc(doc: Mapping[str, Any]) -> dict[str, Any]:
    """A v0.4 JSON config as the equivalent TOML document (snake_case keys, checks' run)."""
    out: dict[str, Any] = _snake_keys(dict(doc))
    checks = out.pop("checks", None)
    if checks is not None:
        if not isinstance(checks, list):
            raise PilotError(f"{LEGACY_NAME}: 'checks' must be a list")
        converted = []
        for c in checks:
            if isinstance(c, dict):
                c = dict(c)
                if "command" in c and "run" not in c:
                    c["run"] = c.pop("command")
            converted.append(c)
        out["check"] = converted
    return out


def migrated_doc(doc: Mapping[str, Any]) -> dict[str, Any]:
    """``legacy_to_doc`` as ``config migrate`` writes it: plain-string checks become tables, and the
    defaults only a v0.4 config has are written out, so every value in force stays the same."""
    out = legacy_to_doc(doc)
    checks = out.pop("check", None)
    for key, value in sorted(V04_DEFAULTS.items()):
        section, name = key.split(".")
        table = out.setdefault(section, {})
        if isinstance(table, dict) and name not in table:
            table[name] = value
    if checks is not None:  # last: TOML tables cannot be followed by the keys above
        out["check"] = [check_table(c) if isinstance(c, str) else c for c in checks]
    return out


def _from_legacy(path: Path, data: bytes) -> Config:
    try:
        import json

        doc = json.loads(data.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise PilotError(f"{path}: not UTF-8 text (byte {exc.start})") from exc
    except json.JSONDecodeError as exc:
        raise PilotError(f"{path}:{exc.lineno}:{exc.colno}: invalid JSON: {exc.msg}") from exc
    if not isinstance(doc, dict):
        raise PilotError(f"{path}: the top level must be a JSON object")
    return _validate(legacy_to_doc(doc), path, data.decode("utf-8"), "v0.4")


# -- where a key is written ------------------------------------------------------------------
def _dotted(raw: str) -> str:
    return ".".join(part.strip().strip("\"'") for part in raw.split("."))


def _toml_line(text: str, key: str, check: int = 0) -> int | None:
    """The line of ``text`` where ``key`` (dotted, from the top) is set or its table opens;
    ``check``: the key is a field of the check-th [[check]] table."""
    import re

    table, checks = "", 0
    for n, line in enumerate(text.splitlines(), 1):
        if m := re.match(r"\s*\[(\[?)\s*([^\]]+?)\s*\]\]?\s*(?:#.*)?$", line):
            table = _dotted(m.group(2))
            checks += 1 if m.group(1) and table == "check" else 0
            if not check and table == key:
                return n
        elif m := re.match(r"\s*((?:[A-Za-z0-9_-]+|\"[^\"]*\"|'[^']*')(?:\s*\.\s*(?:[A-Za-z0-9_-]+|\"[^\"]*\"|'[^']*'))*)\s*=",
                           line):
            if check and (table != "check" or checks != check):
                continue
            full = ".".join(p for p in ("" if check else table, _dotted(m.group(1))) if p)
            if full == key or key.startswith(full + "."):  # an inline table holds the key
                return n
    return None


def _json_line(text: str, key: str) -> int | None:
    import re

    last = re.escape(_snake_to_camel(key.rsplit(".", 1)[-1]))
    for n, line in enumerate(text.splitlines(), 1):
        if re.match(rf'\s*[{{,]?\s*"{last}"\s*:', line):
            return n
    return None


def _line_of(text: str, key: str, source: str = "toml", check: int = 0) -> str:
    """``line N: `` where ``key`` is written, or nothing when it cannot be told."""
    n = _toml_line(text, key, check) if source == "toml" else _json_line(text, key)
    return f"line {n}: " if n else ""


def _shown_key(key: str, source: str) -> str:
    """A key as its file spells it: camelCase in a v0.4 JSON config."""
    return ".".join(_snake_to_camel(p) for p in key.split(".")) if source == "v0.4" else key


# -- types and values ------------------------------------------------------------------------
def _check_type(kind: Any, value: Any) -> bool:
    if isinstance(kind, tuple):
        return isinstance(value, str) and value in kind
    if kind == "bool":
        return isinstance(value, bool)
    if kind == "int":
        return isinstance(value, int) and not isinstance(value, bool)
    if kind == "number":
        return isinstance(value, int | float) and not isinstance(value, bool)
    if kind == "str":
        return isinstance(value, str)
    if kind == "list[str]":
        return isinstance(value, list) and all(isinstance(v, str) for v in value)
    if kind == "dict":
        return isinstance(value, dict)
    raise AssertionError(f"unknown schema type {kind}")


def _expected(kind: Any) -> str:
    if isinstance(kind, tuple):
        return "one of " + ", ".join(repr(k) for k in kind)
    return str(_TYPE_WORDS[kind])


def _type_name(value: Any) -> str:
    return {bool: "a boolean", int: "a number", float: "a number", str: "a string", list: "a list",
            dict: "a table"}.get(type(value), type(value).__name__)


def _value_problem(key: str, shown: str, kind: Any, value: Any) -> str | None:
    """Why a well-typed ``value`` of ``key`` is refused, or None."""
    import math

    if kind in ("int", "number"):
        if not math.isfinite(value):
            return f"key '{shown}' must be a finite number, not {value}"
        minimum = MINIMUM.get(key)
        if key in REVIEW_ROUNDS and value < 1:
            return (f"{shown} = {value} would let a code change skip review; it must be at least 1 "
                    "(documentation-only changes already get 0 rounds)")
        if minimum is None and value <= 0:
            return f"key '{shown}' must be a positive {'whole ' if kind == 'int' else ''}number, not {value}"
        if minimum is not None and value < minimum:
            return f"key '{shown}' must not be negative, not {value}"
    if key == "reviewer.adaptive.docs_extensions":
        code = [e for e in value if e.lower() not in PROSE_EXTENSIONS]
        if code:
            return (f"key '{shown}' lists {code[0]!r}, which is not a documentation format: a code change "
                    f"can never be configured to skip review (documentation is {' '.join(PROSE_EXTENSIONS)})")
    return None


def _is_table(key: str) -> bool:
    prefix = key + "."
    return any(k.startswith(prefix) for k in SCHEMA)


def _flatten(doc: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    """Dotted keys and their values; a table is kept whole where a key (not a table) belongs."""
    flat: dict[str, Any] = {}
    for k, v in doc.items():
        key = f"{prefix}{k}"
        if isinstance(v, dict) and (ALIASES.get(key, key) not in SCHEMA or _is_table(key)):
            flat.update(_flatten(v, key + "."))
        else:
            flat[key] = v
    return flat


def _validate(doc: Mapping[str, Any], path: Path, text: str, source: str) -> Config:
    warnings: list[str] = []
    doc = dict(doc)
    raw_checks = doc.pop("check", [])
    values: dict[str, Any] = {}
    written: dict[str, str] = {}  # canonical key -> the spelling that set it
    for key, value in sorted(_flatten(doc).items()):
        shown = _shown_key(key, source)
        where = _line_of(text, key, source)
        canonical = ALIASES.get(key, key)
        if canonical not in SCHEMA:
            if _is_table(key):
                raise PilotError(f"{path}: {where}key '{shown}' must be a table, not {_type_name(value)}")
            warnings.append(f"{path}: unknown key '{shown}' (ignored)")
            continue
        kind = SCHEMA[canonical][0]
        if not _check_type(kind, value):
            expected = "true, false or a table" if key == "reviewer.adaptive" else _expected(kind)
            raise PilotError(f"{path}: {where}key '{shown}' must be {expected}, not {_type_name(value)}")
        problem = _value_problem(canonical, shown, kind, value)
        if problem is not None:
            raise PilotError(f"{path}: {where}{problem}")
        if canonical in values and values[canonical] != value:
            raise PilotError(f"{path}: {where}'{shown}' and '{_shown_key(written[canonical], source)}' "
                             "are the same setting with two values; keep one")
        values[canonical] = value
        written[canonical] = key
    checks = _checks(raw_checks, path, text, source, warnings)
    return Config(values=values, checks=tuple(checks), source=source, path=path,
                  warnings=tuple(warnings), raw=doc)


def _checks(raw_checks: Any, path: Path, text: str, source: str, warnings: list[str]) -> list[CheckSpec]:
    if not isinstance(raw_checks, list):
        raise PilotError(f"{path}: {_line_of(text, 'check', source)}'check' must be an array of tables ([[check]])")
    checks: list[CheckSpec] = []
    seen: set[str] = set()
    for i, raw in enumerate(raw_checks, 1):
        if isinstance(raw, str):  # v0.4: a plain string is the command
            if not raw.strip():
                raise PilotError(f"{path}: check {i} is an empty command")
            raw = check_table(raw)
        if not isinstance(raw, dict):
            raise PilotError(f"{path}: check {i} must be a table or a command string")
        for need in ("name", "run"):
            if need not in raw:
                raise PilotError(f"{path}: check {i} has no '{need}'")
        fields: dict[str, Any] = {}
        for key, value in raw.items():
            shown = _shown_key(f"check.{key}", source)
            if key not in CHECK_SCHEMA:
                warnings.append(f"{path}: unknown key '{shown}' in check {i} (ignored)")
                continue
            kind = CHECK_SCHEMA[key][0]
            where = _line_of(text, key, source, check=i)
            if not _check_type(kind, value):
                raise PilotError(f"{path}: {where}key '{shown}' of check {i} must be {_expected(kind)}, "
                                 f"not {_type_name(value)}")
            problem = _value_problem(f"check.{key}", shown, kind, value)
            if problem is not None:
                raise PilotError(f"{path}: {where}{problem} (check {i})")
            fields[key] = value
        if not fields["name"].strip() or "/" in fields["name"]:
            raise PilotError(f"{path}: check {i} needs a non-empty name without '/'")
        if fields["name"] in seen:
            raise PilotError(f"{path}: two checks are named {fields['name']!r}")
        seen.add(fields["name"])
        checks.append(
            CheckSpec(
                name=fields["name"],
                run=fields["run"],
                timeout_minutes=fields.get("timeout_minutes"),
                env=tuple(fields.get("env", [])),
                reuse=fields.get("reuse", "same-platform"),
                index=i,
                files=_check_files(path, text, i, fields.get("files", [])),
            )
        )
    return checks


def _check_files(path: Path, text: str, i: int, globs: list[str]) -> tuple[str, ...]:
    """A check's ``files`` globs, refused where git would read them as something else."""
    for g in globs:
        bare = g[1:] if g.startswith("!") else g
        parts = bare.split("/")
        if not bare or bare.startswith(("/", ":")) or ".." in parts:
            raise PilotError(
                f"{path}: {_line_of(text, 'files')}check {i}: files entry {g!r} must be a glob relative to the "
                "repository root (no leading '/' or ':', no '..')"
            )
    if globs and all(g.startswith("!") for g in globs):
        raise PilotError(f"{path}: {_line_of(text, 'files')}check {i}: files has only exclusions ('!...'); "
                         "name the files the check reads")
    return tuple(globs)


# -- edits that keep comments and order (tomlkit) ------------------------------------------
def edit_toml_file(path: Path, mutate: Callable[[Any], None]) -> bytes:
    """Apply ``mutate`` to the tomlkit document of ``path`` and return the new bytes (not written)."""
    import tomlkit

    try:
        doc = tomlkit.parse(path.read_text("utf-8")) if path.exists() else tomlkit.document()
    except Exception as exc:  # tomlkit raises several error types
        raise PilotError(f"{path}: invalid TOML: {exc}") from exc
    mutate(doc)
    return tomlkit.dumps(doc).encode("utf-8")


def toml_dumps(doc: Mapping[str, Any]) -> str:
    """Serialize a plain mapping as TOML (used by ``config migrate``)."""
    import tomlkit

    return tomlkit.dumps(doc)
