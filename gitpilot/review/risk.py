"""Which changes are high-risk: the path rules and the sensitive-keyword rules of adaptive review.

A change is high-risk when a changed path (its old or its new name) is CI configuration, agent
configuration, a dependency manifest or lockfile, auth/security/crypto/payment code, a database
migration (code or SQL under a migrations directory), infrastructure (a Dockerfile or compose
file, Terraform, a Helm chart, a Kubernetes manifest), git's own attribute files, SECURITY.md, or
matches ``reviewer.adaptive.high_risk_paths``; or when a changed line (added or removed) of a
non-documentation file mentions a sensitive keyword, states SQL DDL, or matches one of
``reviewer.adaptive.high_risk_keywords``. ``use_default_high_risk = false`` leaves only the
configured rules. Each finding names its rule in words, so a reason reads the same on every
machine. Pure functions over paths and texts, stdlib only.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from gitpilot.redact import contains_secret, is_credential_filename

DOC_EXTENSIONS = (".md", ".markdown", ".txt", ".rst", ".adoc")


@dataclass(frozen=True)
class Finding:
    """One reason a change is high-risk: where (path, line or 0) and which rule, in words."""

    path: str
    line: int
    rule: str

    def reason(self) -> str:
        where = f"{self.path}:{self.line}" if self.line else self.path
        verb = "changes a line mentioning" if self.line else "is"
        return f"high-risk: {where} {verb} {self.rule}"


def is_doc(path: str, extensions: Sequence[str] = DOC_EXTENSIONS) -> bool:
    return path.lower().endswith(tuple(extensions))


# -- paths ----------------------------------------------------------------------------------
_CI_FILES = frozenset({
    ".gitlab-ci.yml", ".gitlab-ci.yaml", ".travis.yml", "azure-pipelines.yml", "azure-pipelines.yaml",
    "jenkinsfile", "bitbucket-pipelines.yml", ".drone.yml", "appveyor.yml", ".appveyor.yml",
    ".woodpecker.yml", "cloudbuild.yaml", "cloudbuild.yml", ".pre-commit-config.yaml", "codecov.yml",
    ".cirrus.yml", "buildkite.yml", "dependabot.yml", "dependabot.yaml", "renovate.json", ".renovaterc",
    ".renovaterc.json",
})
_CI_DIRS = (".github/workflows/", ".github/actions/", ".circleci/", ".buildkite/", ".gitlab/ci/",
            ".woodpecker/", ".azure-pipelines/", ".tekton/")
_AGENT_FILES = frozenset({"claude.md", "claude.local.md", "agents.md", "agents.override.md", "gemini.md",
                          ".gitpilot.toml", ".mcp.json", ".cursorrules", "copilot-instructions.md"})
_AGENT_DIRS = frozenset({".claude", ".codex", ".autopilot", ".cursor", ".gemini"})
_MANIFESTS = frozenset({
    "package.json", "package-lock.json", "npm-shrinkwrap.json", "yarn.lock", "pnpm-lock.yaml",
    "pnpm-workspace.yaml", "bun.lock", "bun.lockb", ".npmrc", ".yarnrc", ".yarnrc.yml",
    "pyproject.toml", "setup.py", "setup.cfg", "pipfile", "pipfile.lock", "poetry.lock", "uv.lock",
    "pdm.lock", "environment.yml", "environment.yaml", "conda-lock.yml",
    "cargo.toml", "cargo.lock", "go.mod", "go.sum", "go.work", "go.work.sum", "gopkg.lock", "gopkg.toml",
    "gemfile", "gemfile.lock", "composer.json", "composer.lock", "pom.xml", "build.gradle",
    "build.gradle.kts", "settings.gradle", "settings.gradle.kts", "gradle.lockfile", "libs.versions.toml",
    "packages.lock.json", "directory.packages.props", "paket.dependencies", "paket.lock", "mix.exs",
    "mix.lock", "pubspec.yaml", "pubspec.lock", "package.swift", "package.resolved", "podfile",
    "podfile.lock", "cartfile", "cartfile.resolved", "deno.json", "deno.jsonc", "deno.lock",
    "vcpkg.json", "conanfile.txt", "conanfile.py", "flake.nix", "flake.lock", "rebar.config",
    "rebar.lock", "stack.yaml", "cabal.project", "renv.lock", "description", "build.sbt", "project.clj",
    "deps.edn", "shard.yml", "shard.lock", "requirements.in",
})
_MANIFEST_SUFFIXES = (".gemspec", ".csproj", ".fsproj", ".vbproj", ".cabal", ".nimble", ".rockspec")
_REQUIREMENTS = re.compile(r"^(requirements|constraints)([-_.][\w.-]*)?\.(txt|in)$")
_GIT_FILES = frozenset({".gitignore", ".gitattributes", ".gitmodules"})
# Path words (directory or file-name tokens) that mark auth, security, crypto or payment code.
_SENSITIVE_WORDS = frozenset({
    "auth", "authn", "authz", "oauth", "oauth2", "oidc", "saml", "sso", "login", "logout", "signin",
    "signup", "password", "passwords", "passwd", "credential", "credentials", "secret", "secrets",
    "security", "secure", "crypto", "cryptography", "cipher", "ciphers", "jwt", "tls", "ssl", "acl",
    "rbac", "permission", "permissions", "payment", "payments", "billing", "stripe", "paypal",
    "braintree", "wallet", "sanitizer", "sanitize", "csrf", "keystore", "keychain", "vault",
})
_SENSITIVE_STEMS = ("authent", "authori", "crypt", "encrypt", "decrypt", "passw", "credential", "payment")
_MIGRATION_DIRS = frozenset({"migrations", "migration", "migrate", "alembic", "flyway", "liquibase"})
_SCHEMA_FILES = frozenset({"schema.prisma", "schema.rb", "structure.sql"})
# Infrastructure: how the software is built into images and deployed.
_CONTAINER_FILES = re.compile(r"^(?:(?:docker|container)file(?:[._-][\w.-]*)?|[\w.-]+\.(?:docker|container)file|"
                              r"(?:docker-)?compose(?:[._-][\w.-]*)?\.ya?ml)$")
_TERRAFORM_SUFFIXES = (".tf", ".tf.json", ".tfvars", ".tfvars.json", ".hcl")
_HELM_FILES = frozenset({"chart.yaml", "chart.lock", "values.schema.json", "helmfile.yaml", "helmfile.yml",
                         ".helmignore", "helmfile.yaml.gotmpl"})
_HELM_DIRS = frozenset({"charts", "chart", "helm"})
_KUBE_FILES = frozenset({"kustomization.yaml", "kustomization.yml", "skaffold.yaml", "skaffold.yml"})
_KUBE_DIRS = frozenset({"k8s", "kubernetes", "kube", "kustomize", "terraform", "infra", "infrastructure",
                        "deploy", "deployment", "deployments", "ansible", "pulumi"})
_KUBE_APIVERSION = re.compile(r"(?m)^apiVersion:\s*[\w.-]*/?v\d+\w*\s*$")
_KUBE_KIND = re.compile(r"(?m)^kind:\s*[A-Z][A-Za-z]+\s*$")


_ALNUM = re.compile(r"[A-Za-z0-9]+")
_WORD = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+\d*|[A-Z]+\d*|\d+")


def _tokens(text: str) -> list[str]:
    """Lower-case words of an identifier or a line: ``getAuthToken_v2`` -> get, auth, token, v2."""
    words: list[str] = []
    for run in _ALNUM.findall(text):
        words.extend(w.lower() for w in _WORD.findall(run))
    return words


def path_rule(path: str, extra: Sequence[str] = (), defaults: bool = True,
              docs: Sequence[str] = DOC_EXTENSIONS) -> str | None:
    """The high-risk rule ``path`` falls under, in words, or None (``defaults``: the built-in rules
    apply, not only ``extra``; ``docs``: the documentation extensions)."""
    if not defaults:
        return "a configured high-risk path (reviewer.adaptive.high_risk_paths)" if _matches(path, extra) else None
    low = path.lower()
    parts = low.split("/")
    name = parts[-1]
    if is_credential_filename(path):  # high-risk by its name; its lines are never read
        return "a credential file"
    if name in _CI_FILES or low.startswith(_CI_DIRS):
        return "CI configuration"
    if name in _AGENT_FILES or any(p in _AGENT_DIRS for p in parts[:-1]):
        return "agent configuration"
    if name in _MANIFESTS or name.endswith(_MANIFEST_SUFFIXES) or _REQUIREMENTS.match(name):
        return "a dependency manifest or lockfile"
    if name in _GIT_FILES:
        return f"git configuration ({name})"
    if name == "security.md":
        return "the security policy (SECURITY.md)"
    if extra and _matches(path, extra):
        return "a configured high-risk path (reviewer.adaptive.high_risk_paths)"
    if is_doc(path, docs):
        return None
    # Documentation was answered above: what is left under a migrations directory is code or SQL.
    if any(p in _MIGRATION_DIRS for p in parts[:-1]):
        return "a database migration"
    if name in _SCHEMA_FILES:
        return "a database schema"
    infra = infrastructure_rule(parts)
    if infra is not None:
        return infra
    original = path.split("/")
    stem = original[-1].rsplit(".", 1)[0] if "." in original[-1].lstrip(".") else original[-1]
    for word in _tokens("/".join([*original[:-1], stem])):
        if word in _SENSITIVE_WORDS or word.startswith(_SENSITIVE_STEMS):
            return f"auth, security, crypto or payment code ({word})"
    return None


def infrastructure_rule(parts: Sequence[str]) -> str | None:
    """Which kind of infrastructure the lower-cased path ``parts`` are, or None."""
    name, dirs = parts[-1], parts[:-1]
    if _CONTAINER_FILES.match(name):
        return "infrastructure: a container build or compose file"
    if name.endswith(_TERRAFORM_SUFFIXES):
        return "infrastructure: Terraform or HCL"
    if name in _HELM_FILES or any(p in _HELM_DIRS for p in dirs):
        return "infrastructure: a Helm chart"
    if name in _KUBE_FILES or any(p in _KUBE_DIRS for p in dirs):
        return "infrastructure: deployment configuration"
    return None


def is_kubernetes_manifest(path: str, text: str) -> bool:
    """A YAML file that declares a Kubernetes object (``apiVersion:`` and ``kind:`` at the top level)."""
    return path.lower().endswith((".yaml", ".yml")) and bool(_KUBE_APIVERSION.search(text)) \
        and bool(_KUBE_KIND.search(text))


def _matches(path: str, patterns: Sequence[str]) -> bool:
    return any(_glob(p).match(path) for p in patterns if p.strip().strip("/"))


def _glob(pattern: str) -> re.Pattern[str]:
    """A gitignore-like pattern: no inner slash matches at any depth; a trailing slash means a
    directory (everything under it); ``**`` spans directories; a bare name also covers its contents."""
    pat = pattern.strip()
    directory = pat.endswith("/")
    pat = pat.rstrip("/")
    anchored = "/" in pat
    pat = pat.lstrip("/")
    body = []
    i = 0
    while i < len(pat):
        if pat.startswith("**/", i):
            body.append("(?:.*/)?")
            i += 3
        elif pat.startswith("**", i):
            body.append(".*")
            i += 2
        else:
            body.append({"*": "[^/]*", "?": "[^/]"}.get(pat[i], re.escape(pat[i])))
            i += 1
    tail = "/.*" if directory else "(?:/.*)?"
    return re.compile(("^" if anchored else "^(?:.*/)?") + "".join(body) + tail + "$", re.IGNORECASE)


# -- changed lines --------------------------------------------------------------------------
# (label, word-token phrases): a phrase matches consecutive tokens of the line.
_PHRASES: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("a password", ("password", "passwords", "passwd", "passphrase")),
    ("a secret", ("secret", "secrets", "client secret", "private key", "api key", "apikey", "access key",
                  "access token", "refresh token", "auth token", "bearer", "credential", "credentials")),
    ("cryptography", ("crypto", "cryptography", "cipher", "encrypt", "decrypt", "encryption", "decryption",
                      "hmac", "bcrypt", "scrypt", "pbkdf2", "argon2", "aes", "rsa", "ecdsa", "ed25519",
                      "nacl", "openssl")),
    ("payments", ("payment", "payments", "billing", "stripe", "paypal", "braintree", "credit card",
                  "card number", "cvv", "iban")),
    ("authentication", ("authenticate", "authentication", "authorize", "authorization", "oauth", "jwt",
                        "saml", "csrf", "xsrf", "session cookie")),
    ("running a process", ("subprocess", "child process", "popen", "os system", "shell true",
                           "exec command", "process builder", "get runtime", "spawn sync", "exec sync",
                           "exec file")),
    ("HTML injection", ("inner html", "outer html", "document write", "v html", "mark safe",
                        "html safe", "bypass security trust")),
    ("unsafe deserialization", ("pickle load", "pickle loads", "yaml load", "marshal loads",
                                "unserialize")),
    ("disabled certificate checks", ("verify false", "reject unauthorized", "insecure skip verify",
                                     "cert none", "check hostname false")),
)
# SQL DDL: upper-case keywords anywhere (the SQL convention; "create user" in prose is not DDL),
# any case in .sql files; in other code, any case when the words have a statement's shape (an
# object kind a sentence rarely names, then the object's name) or grant a privilege on something.
_DDL_TEXT = (r"\b(CREATE|ALTER|DROP|TRUNCATE)\s+(TABLE|INDEX|UNIQUE INDEX|DATABASE|SCHEMA|VIEW|TRIGGER|"
             r"FUNCTION|PROCEDURE|USER|ROLE|SEQUENCE|TYPE|EXTENSION)\b"
             r"|\b(GRANT|REVOKE)\s+[\w ,]+?\s+(ON|TO|FROM)\b")
_DDL = re.compile(_DDL_TEXT)
_DDL_ANY_CASE = re.compile(_DDL_TEXT, re.IGNORECASE)
_NAME = r"[`\"\[]?[A-Za-z_][\w$]*[`\"\]]?"
_DDL_STATEMENT = re.compile(
    r"\b(create|alter|drop|truncate)\s+(?:or\s+replace\s+)?(?:(?:temp|temporary|unique|materialized)\s+)?"
    r"(table|index|database|schema|view|trigger|sequence|extension|procedure)\s+"
    rf"(?:if\s+(?:not\s+)?exists\s+)?{_NAME}(?:\.{_NAME})?"
    r"|\b(grant|revoke)\s+(select|insert|update|delete|all|usage|execute|references|truncate|connect)\b"
    r"[\w ,]*?\s+on\s+\S+\s+(?:to|from)\b",
    re.IGNORECASE)
_SQL_EXTENSIONS = (".sql", ".ddl", ".psql", ".pgsql", ".mysql")
_DYNAMIC = re.compile(r"(?<![\w.$])(eval|exec)\s*\(|\bnew\s+Function\s*\(|\b__import__\s*\(")


def _phrase_index() -> dict[str, list[tuple[tuple[str, ...], str]]]:
    index: dict[str, list[tuple[tuple[str, ...], str]]] = {}
    for label, phrases in _PHRASES:
        for phrase in phrases:
            words = tuple(phrase.split())
            index.setdefault(words[0], []).append((words, label))
    return index


_INDEX = _phrase_index()


def line_rule(text: str, extra: Sequence[str] = (), sql: bool = False, defaults: bool = True) -> str | None:
    """The sensitive thing a changed line mentions, in words, or None (``sql``: a .sql file;
    ``defaults``: the built-in rules apply, not only the ``extra`` keywords)."""
    if defaults:
        rule = _builtin_line_rule(text, sql)
        if rule is not None:
            return rule
    for keyword in extra:
        if keyword.strip() and _keyword_re(keyword).search(text):
            return f"a configured high-risk keyword ({keyword.strip()})"
    if defaults and contains_secret(text):
        return "a credential in a known token format"
    return None


def _builtin_line_rule(text: str, sql: bool) -> str | None:
    words = _tokens(text)
    for i, word in enumerate(words):
        for phrase, label in _INDEX.get(word, ()):
            if tuple(words[i : i + len(phrase)]) == phrase:
                return f"{label} ({' '.join(phrase)})"
    m = (_DDL_ANY_CASE if sql else _DDL).search(text)
    if m:
        return f"SQL DDL ({' '.join(m.group(0).split()[:2]).upper()})"
    m = _DDL_STATEMENT.search(text)
    if m:
        verb, kind = [g for g in m.groups() if g]
        return f"SQL DDL ({verb.upper()} {kind.upper()})"
    m = _DYNAMIC.search(text)
    if m:
        return f"dynamic code execution ({m.group(0).rstrip('( ').strip()})"
    return None


def _keyword_re(keyword: str) -> re.Pattern[str]:
    k = keyword.strip()
    left = r"(?<![A-Za-z0-9_])" if re.match(r"\w", k) else ""
    right = r"(?![A-Za-z0-9_])" if re.search(r"\w$", k) else ""
    return re.compile(left + re.escape(k) + right, re.IGNORECASE)


# Cheap pre-checks on lower-cased text, true for every line ``line_rule`` can match: a phrase needs
# each of its words as a substring (camelCase and snake_case keep them), DDL and dynamic code
# their keywords. Most files fail them all and are never tokenized or searched by regex.
_NEEDLES: tuple[tuple[str, ...], ...] = (
    *sorted({tuple(p.split()) for _, ps in _PHRASES for p in ps}),
    *((w,) for w in ("create", "alter", "drop", "truncate", "grant", "revoke", "eval", "exec", "function",
                     "__import__")),
)


def _may_match(low: str) -> bool:
    return any(all(w in low for w in words) for words in _NEEDLES)


def line_findings(path: str, lines: Sequence[tuple[str, int, str]], extra: Sequence[str] = (),
                  defaults: bool = True, docs: Sequence[str] = DOC_EXTENSIONS) -> Finding | None:
    """The first changed line of a non-documentation file that mentions something sensitive."""
    if is_doc(path, docs) or not lines:
        return None
    blob = "\n".join(text for _, _, text in lines)
    extras = [_keyword_re(k) for k in extra if k.strip()]
    secret = defaults and contains_secret(blob)
    builtin = defaults and _may_match(blob.lower())
    if not secret and not builtin and not any(r.search(blob) for r in extras):
        return None
    sql = path.lower().endswith(_SQL_EXTENSIONS)
    for _origin, number, text in lines:
        if secret or (builtin and _may_match(text.lower())) or any(r.search(text) for r in extras):
            rule = line_rule(text, extra, sql, defaults)
            if rule is not None:
                return Finding(path, number, rule)
    if secret:  # a credential spread over lines (a key block): name where the change starts
        return Finding(path, lines[0][1], "a credential in a known token format")
    return None
