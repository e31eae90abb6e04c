"""Receipts: a change to a settings file is recorded before it is made, and undone byte for byte.

A receipt lives in ``<git common dir>/pilot/receipts/``: ``<id>.json`` (the file, whether it
existed, the sha256 of its original bytes and of the new bytes, what changed, its state) and
``<id>.orig`` (the original bytes, verbatim). Both are written and synced *before* the file
is touched, so a crash between the two steps leaves a receipt that undo understands.

A receipt is machine-local state that a crash or a hand edit can damage. One that is not a
JSON object of the expected fields (with its own id, and the file an absolute path) is named
and refused when asked for by id; listing and name lookups skip it (and say so when nothing
else matches), so one damaged receipt never blocks the undo of another.

Undo restores the original bytes only when the file still has exactly the bytes the change
produced (its sha256 equals the receipt's new hash). If anyone edited the file since, undo
changes nothing and says what to reconcile by hand. Files are replaced atomically and
durably (``fileio.atomic_write`` with ``fsync``), keeping the original's mode.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

from gitpilot.errors import PilotError
from gitpilot.fileio import atomic_write

APPLIED = "applied"
ROLLED_BACK = "rolled back"
UNDONE = "undone"
FAILED = "not applied"
STATES = frozenset({APPLIED, ROLLED_BACK, UNDONE, FAILED})


def sha256(data: bytes | None) -> str:
    """Hex sha256 of ``data``; the empty string stands for "no file"."""
    return "" if data is None else hashlib.sha256(data).hexdigest()


def read_bytes(path: Path) -> bytes | None:
    try:
        return path.read_bytes()
    except FileNotFoundError:
        return None


@dataclass
class Receipt:
    """One recorded change of one file."""

    id: str
    name: str  # the proposal applied
    file: str  # absolute path
    existed: bool
    original_sha256: str
    new_sha256: str
    change: str  # what was changed, in words
    created: str  # UTC, ISO 8601
    state: str = APPLIED
    created_dirs: list[str] = field(default_factory=list)
    note: str = ""

    def to_json(self) -> str:
        return json.dumps(asdict(self), indent=2, sort_keys=True) + "\n"


class Receipts:
    """The receipts of one repository."""

    def __init__(self, directory: Path) -> None:
        self.dir = directory

    def path(self, rid: str) -> Path:
        return self.dir / f"{rid}.json"

    def original_path(self, rid: str) -> Path:
        return self.dir / f"{rid}.orig"

    def _new_id(self, name: str) -> str:
        stamp = time.strftime("%Y%m%d-%H%M%S", time.gmtime())
        slug = re.sub(r"[^A-Za-z0-9._-]+", "-", name).strip("-") or "change"
        rid = f"{stamp}-{slug}"
        n = 2
        while self.path(rid).exists():
            rid = f"{stamp}-{slug}-{n}"
            n += 1
        return rid

    def record(
        self,
        name: str,
        file: Path,
        original: bytes | None,
        new: bytes,
        change: str,
        created_dirs: list[str] | None = None,
    ) -> Receipt:
        """Write (and sync) the receipt of a change that is about to be made."""
        self.dir.mkdir(parents=True, exist_ok=True)
        rid = self._new_id(name)
        receipt = Receipt(
            id=rid,
            name=name,
            file=str(file),
            existed=original is not None,
            original_sha256=sha256(original),
            new_sha256=sha256(new),
            change=change,
            created=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            created_dirs=created_dirs or [],
        )
        if original is not None:
            write_atomic(self.original_path(rid), original)
        write_atomic(self.path(rid), receipt.to_json().encode("utf-8"))
        return receipt

    def save(self, receipt: Receipt) -> None:
        write_atomic(self.path(receipt.id), receipt.to_json().encode("utf-8"))

    def load(self, rid: str) -> Receipt:
        path = self.path(rid)
        try:
            data = json.loads(path.read_bytes().decode("utf-8"))
        except FileNotFoundError as exc:
            raise PilotError(f"no receipt {rid} (receipts are in {self.dir})") from exc
        except (OSError, ValueError) as exc:
            raise PilotError(f"{path}: not a readable receipt") from exc
        problem = _shape_problem(data, rid)
        if problem:
            raise PilotError(f"{path}: not a readable receipt: {problem}; nothing done")
        known = set(Receipt.__dataclass_fields__)
        return Receipt(**{k: v for k, v in data.items() if k in known})

    def _scan(self) -> tuple[list[Receipt], list[str]]:
        """Every readable receipt, and the file names of damaged ones."""
        if not self.dir.is_dir():
            return [], []
        found: list[Receipt] = []
        damaged: list[str] = []
        for p in sorted(self.dir.glob("*.json")):
            try:
                found.append(self.load(p.stem))
            except PilotError:
                damaged.append(p.name)
        return found, damaged

    def all(self) -> list[Receipt]:
        """The readable receipts (a damaged one is skipped: it must not block the others)."""
        return self._scan()[0]

    def find(self, ref: str) -> Receipt:
        """A receipt by id, by unique id prefix, or the latest applied one of a proposal name."""
        if self.path(ref).exists():
            return self.load(ref)
        everything, damaged = self._scan()
        by_prefix = [r for r in everything if r.id.startswith(ref)]
        if len(by_prefix) == 1:
            return by_prefix[0]
        applied = [r for r in everything if r.name == ref and r.state == APPLIED]
        if applied:
            return applied[-1]
        if len(by_prefix) > 1:
            raise PilotError(
                f"{ref!r} names {len(by_prefix)} receipts: " + ", ".join(r.id for r in by_prefix)
            )
        known = ", ".join(r.id for r in everything if r.state == APPLIED) or "none applied"
        if damaged:
            known += f"; damaged, not read: {', '.join(damaged)}"
        raise PilotError(f"no receipt {ref!r} (receipts: {known})")

    def original(self, receipt: Receipt) -> bytes | None:
        if not receipt.existed:
            return None
        data = read_bytes(self.original_path(receipt.id))
        if data is None or sha256(data) != receipt.original_sha256:
            raise PilotError(
                f"receipt {receipt.id}: its copy of the original bytes is missing or damaged "
                f"({self.original_path(receipt.id)})"
            )
        return data

    def restore(self, receipt: Receipt, state: str, note: str = "") -> None:
        """Put the original bytes back (or remove a file the change created) and mark the receipt."""
        path = Path(receipt.file)
        original = self.original(receipt)
        if original is None:
            try:
                path.unlink()
            except FileNotFoundError:
                pass
            for d in reversed(receipt.created_dirs):
                try:
                    os.rmdir(d)
                except OSError:
                    pass  # not empty any more: someone put files there
        else:
            write_atomic(path, original)
        receipt.state = state
        receipt.note = note
        self.save(receipt)

    def undo(self, ref: str) -> Receipt:
        """Restore the original bytes of a receipt's file if nobody changed it since."""
        receipt = self.find(ref)
        if receipt.state != APPLIED:
            raise PilotError(f"receipt {receipt.id} is already {receipt.state}; nothing to undo")
        path = Path(receipt.file)
        if path.is_symlink():
            raise PilotError(
                f"{path} is now a symlink; not following it. Restore by hand from "
                f"{self.original_path(receipt.id)}"
            )
        current = read_bytes(path)
        now = sha256(current)
        if now == receipt.original_sha256:
            receipt.state = UNDONE
            receipt.note = "the file already had its original bytes"
            self.save(receipt)
            return receipt
        if now != receipt.new_sha256:
            later = [
                r.id
                for r in self.all()
                if r.file == receipt.file
                and r.state == APPLIED
                and r.id != receipt.id
                and r.new_sha256 == now
            ]
            if later:
                raise PilotError(
                    f"{path} was changed again by {later[-1]}; undo that first "
                    f"(`git pilot optimize undo {later[-1]}`), then {receipt.id}"
                )
            keep = (
                f"the original bytes are in {self.original_path(receipt.id)}"
                if receipt.existed
                else "the file did not exist before"
            )
            what = "was deleted" if current is None else f"now has sha256 {now[:12]}"
            raise PilotError(
                f"{path} changed since {receipt.id} was applied ({what}, expected "
                f"{receipt.new_sha256[:12]}); nothing restored. Reconcile by hand: the change was: "
                f"{receipt.change}; {keep}"
            )
        self.restore(receipt, UNDONE)
        return receipt


_TEXT_FIELDS = ("id", "name", "file", "original_sha256", "new_sha256", "change", "created")


def _shape_problem(data: object, rid: str) -> str | None:
    """Why ``data`` is not a receipt this module wrote under the id ``rid``, or None."""
    if not isinstance(data, dict):
        return "not a JSON object"
    for key in _TEXT_FIELDS:
        if not isinstance(data.get(key), str):
            return f"'{key}' missing or not a string"
    if data["id"] != rid:
        return f"its id {data['id']!r} is not its file name"
    if not isinstance(data.get("existed"), bool):
        return "'existed' missing or not true/false"
    if data.get("state", APPLIED) not in STATES:
        return f"unknown state {data.get('state')!r}"
    if not isinstance(data.get("note", ""), str):
        return "'note' is not a string"
    dirs = data.get("created_dirs", [])
    if not isinstance(dirs, list) or not all(isinstance(d, str) and os.path.isabs(d) for d in dirs):
        return "'created_dirs' is not a list of absolute paths"
    if not os.path.isabs(data["file"]):
        return "'file' is not an absolute path"
    return None


def write_atomic(path: Path, data: bytes) -> None:
    """Replace ``path`` with ``data`` atomically and durably, keeping an existing file's permission bits.

    Receipts and the files they restore are the user's record: always synced."""
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(path, data, fsync=True)
