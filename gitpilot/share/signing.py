"""ssh signatures on check records: signing what this clone records, verifying what others sent.

Signing (``git config pilot.sign true`` with git's ``gpg.format = ssh`` and ``user.signingkey``)
runs ``ssh-keygen -Y sign -n git-pilot`` once for all the records of one ``git pilot check``
over each record's ``signed_payload()`` (the line without its signature and remote tag; it
names the tree). The signature (the armored body, base64 on one line) goes into the line, so
the line-wise union merge and stock git keep working.

Verifying runs what git runs for ssh-signed commits: ``ssh-keygen -Y find-principals`` and
``-Y verify`` against ``gpg.ssh.allowedSignersFile`` (with ``gpg.ssh.revocationFile``), at the
record's own time (``-O verify-time``), so an answer depends only on the record and those
files. Answers are kept per tree in ``<git common dir>/pilot/signatures/<files digest>/``: a
cache hit reads one small file and starts no ``ssh-keygen``; editing the allowed-signers file
changes the digest, so a removed key stops counting at the next check.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from gitpilot.checks.records import Record
from gitpilot.errors import RecordLost
from gitpilot.fileio import append_whole_line
from gitpilot.gitrun import clean_env
from gitpilot.repo import Repo

TYPE_CHECKING = False
if TYPE_CHECKING:
    from gitpilot.share.settings import Settings

NAMESPACE = "git-pilot"
_BEGIN = "-----BEGIN SSH SIGNATURE-----"
_END = "-----END SSH SIGNATURE-----"
MAX_SIG_CHARS = 4000  # an RSA-8192 signature is ~1,500 base64 characters


class SigningError(RecordLost):
    """Records could not be signed: none is written unsigned in their place."""


def armor(body: str) -> str:
    return _BEGIN + "\n" + "\n".join(body[i:i + 70] for i in range(0, len(body), 70)) + "\n" + _END + "\n"


def dearmor(text: str) -> str:
    lines = [ln.strip() for ln in text.strip().splitlines()]
    if len(lines) < 3 or lines[0] != _BEGIN or lines[-1] != _END:
        raise SigningError("ssh-keygen wrote no SSH SIGNATURE block")
    return "".join(lines[1:-1])


def _run(argv: list[str], stdin: bytes | None = None) -> subprocess.CompletedProcess[bytes]:
    try:
        return subprocess.run(argv, input=stdin if stdin is not None else b"", capture_output=True,
                              env=clean_env(), timeout=60)
    except FileNotFoundError as exc:
        raise SigningError(f"{argv[0]} is not installed (gpg.ssh.program)") from exc
    except subprocess.TimeoutExpired as exc:
        raise SigningError(f"{argv[0]} did not answer in 60 s") from exc


def _why(proc: subprocess.CompletedProcess[bytes]) -> str:
    lines = [ln.strip() for ln in proc.stderr.decode("utf-8", "replace").splitlines() if ln.strip()]
    lines = [ln for ln in lines if not ln.startswith(("Signing file", "Write signature"))]
    return lines[-1] if lines else f"exit {proc.returncode}"


# -- signing -------------------------------------------------------------------------------
def key_argv(settings: Settings, tmp: Path) -> list[str]:
    """``-f KEY`` (and ``-U`` for a literal public key held by ssh-agent), as git signs commits."""
    if settings.format != "ssh":
        raise SigningError(f"pilot.sign is true but gpg.format is {settings.format!r}: "
                           "set git config gpg.format ssh")
    key = settings.signing_key
    if not key:
        raise SigningError("pilot.sign is true but user.signingkey is not set "
                           "(git config user.signingkey ~/.ssh/id_ed25519)")
    literal = key[5:] if key.startswith("key::") else key if key.startswith(("ssh-", "ecdsa-", "sk-")) else None
    if literal is not None:
        path = tmp / "signing-key.pub"
        path.write_text(literal.strip() + "\n")
        return ["-f", str(path), "-U"]
    path = Path(os.path.expanduser(key))
    if not path.is_file():
        raise SigningError(f"user.signingkey {key} is not a readable key file")
    return ["-f", str(path)]


def sign_payloads(settings: Settings, payloads: list[bytes]) -> list[str]:
    """One signature (base64 body) per payload, from one ``ssh-keygen -Y sign`` run."""
    if not payloads:
        return []
    import tempfile

    with tempfile.TemporaryDirectory(prefix="git-pilot-sign-") as tmpname:
        tmp = Path(tmpname)
        files = []
        for i, data in enumerate(payloads):
            f = tmp / f"record-{i}"
            f.write_bytes(data)
            files.append(str(f))
        proc = _run([settings.program, "-Y", "sign", "-n", NAMESPACE, *key_argv(settings, tmp), *files])
        if proc.returncode != 0:
            raise SigningError(f"cannot sign with user.signingkey {settings.signing_key}: {_why(proc)}")
        try:
            return [dearmor(Path(f + ".sig").read_text("ascii")) for f in files]
        except (OSError, UnicodeDecodeError) as exc:
            raise SigningError(f"ssh-keygen wrote no signature: {exc}") from exc


def sign_records(settings: Settings, records: dict[str, list[Record]]) -> dict[str, list[Record]]:
    """The records, each naming its tree and signed over its payload."""
    named = {tree: [r.copy(tree=tree, sig=None) for r in recs] for tree, recs in records.items()}
    flat = [r for tree in sorted(named) for r in named[tree]]
    for rec, sig in zip(flat, sign_payloads(settings, [r.signed_payload() for r in flat]), strict=True):
        rec.sig = sig
    return named


# -- verifying -----------------------------------------------------------------------------
def _verify_time(stamp: str) -> str:
    # "2024-05-01T12:00:00Z" -> "20240501120000Z": the key must have been valid when it signed.
    return stamp.replace("-", "").replace("T", "").replace(":", "")


class Verifier:
    """Verifies signed records against the allowed-signers file, with a per-tree cache."""

    def __init__(self, repo: Repo, settings: Settings) -> None:
        self.repo = repo
        self.settings = settings
        self.problem: str | None = None  # why no signature can count here
        self.signers: Path | None = None
        self.revocation: Path | None = None
        self.digest = ""
        self._answers: dict[str, dict[str, str]] = {}
        self._setup()

    def _setup(self) -> None:
        s = self.settings
        if not s.allowed_signers:
            self.problem = "signed, but gpg.ssh.allowedSignersFile is not set here"
            return
        self.signers = self._resolve(s.allowed_signers)
        root = self.repo.root
        if root is not None and _inside(self.signers, root) and not _inside(self.signers, self.repo.git_dir):
            # A branch could add its own key to a file in the work tree: trust lives outside it.
            self.problem = (f"signed, but gpg.ssh.allowedSignersFile {self.signers} is inside the work tree, "
                            "where a branch can change it (keep it outside the repository)")
            return
        parts = [s.program.encode(), b"\0"]
        try:
            parts.append(self.signers.read_bytes())
        except OSError as exc:
            self.problem = f"signed, but gpg.ssh.allowedSignersFile {self.signers} is unreadable ({exc.strerror})"
            return
        if s.revocation:
            self.revocation = self._resolve(s.revocation)
            try:
                parts += [b"\0", self.revocation.read_bytes()]
            except OSError as exc:
                self.problem = f"signed, but gpg.ssh.revocationFile {self.revocation} is unreadable ({exc.strerror})"
                return
        import blake3

        self.digest = blake3.blake3(b"".join(parts)).hexdigest()[:24]

    def _resolve(self, value: str) -> Path:
        path = Path(os.path.expanduser(value))
        if not path.is_absolute() and self.repo.root is not None:
            path = self.repo.root / path
        return Path(os.path.realpath(path))

    @property
    def cache_dir(self) -> Path:
        return self.repo.pilot_dir / "signatures" / self.digest

    def why_not(self, rec: Record, tree: str) -> str | None:
        """None when ``rec``'s signature verifies for ``tree``; else why it does not count."""
        if rec.sig is None:
            return "unsigned"
        if rec.tree != tree:
            return f"its signature is for another tree ({(rec.tree or 'none')[:12]})"
        if self.problem is not None:
            return self.problem
        import blake3

        digest = blake3.blake3(rec.signed_payload() + b"\0" + rec.sig.encode()).hexdigest()[:32]
        answers = self._load(tree)
        if digest not in answers:
            answers[digest] = self._verify(rec)
            self._keep(tree, digest, answers[digest])
        answer = answers[digest]
        return None if answer == "ok" else answer

    def _cache_file(self, tree: str) -> Path:
        return self.cache_dir / tree[:2] / tree[2:]

    def _load(self, tree: str) -> dict[str, str]:
        if tree not in self._answers:
            answers: dict[str, str] = {}
            try:
                data = self._cache_file(tree).read_bytes()
            except OSError:
                data = b""
            for line in data.decode("utf-8", "replace").splitlines():
                digest, _, answer = line.partition(" ")
                if len(digest) == 32 and answer:
                    answers[digest] = answer
            self._answers[tree] = answers
        return self._answers[tree]

    def _keep(self, tree: str, digest: str, answer: str) -> None:
        path = self._cache_file(tree)
        try:
            if not self.cache_dir.exists():
                _drop_other_digests(self.cache_dir)
            path.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
            try:
                append_whole_line(fd, f"{digest} {answer}\n".encode())
            finally:
                os.close(fd)
        except OSError:
            pass  # a cache that cannot be written only costs a verification next time

    def _verify(self, rec: Record) -> str:
        assert self.signers is not None and rec.sig is not None
        program, signers = self.settings.program, str(self.signers)
        when = ["-O", f"verify-time={_verify_time(rec.time)}"]
        payload = rec.signed_payload()
        import tempfile

        with tempfile.TemporaryDirectory(prefix="git-pilot-verify-") as tmp:
            sig = Path(tmp) / "record.sig"
            sig.write_text(armor(rec.sig), "ascii")
            found = _run([program, "-Y", "find-principals", "-s", str(sig), "-f", signers, *when])
            principals = found.stdout.decode("utf-8", "replace").split() if found.returncode == 0 else []
            refusal = _why(found) if found.returncode != 0 else ""
            revoke = ["-r", str(self.revocation)] if self.revocation is not None else []
            for principal in principals:
                proc = _run([program, "-Y", "verify", "-f", signers, "-I", principal, "-n", NAMESPACE,
                             "-s", str(sig), *revoke, *when], payload)
                if proc.returncode == 0:
                    return "ok"
                refusal = _why(proc)
            intact = _run([program, "-Y", "check-novalidate", "-n", NAMESPACE, "-s", str(sig)], payload)
        if intact.returncode != 0:
            return "its signature does not match the record (edited after signing)"
        return f"signed by a key not allowed in {signers} ({refusal})"


def _inside(path: Path, directory: Path) -> bool:
    try:
        path.relative_to(os.path.realpath(directory))
    except ValueError:
        return False
    return True


def _drop_other_digests(current: Path) -> None:
    """Answers kept for earlier allowed-signers files are never read again."""
    import shutil

    parent = current.parent
    if not parent.is_dir():
        return
    for old in parent.iterdir():
        if old != current and old.is_dir():
            shutil.rmtree(old, ignore_errors=True)
