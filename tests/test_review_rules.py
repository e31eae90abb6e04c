"""Review budgets that read the diff right: a migration is code or SQL under a migrations
directory (not ``docs/migration.md``); infrastructure (Dockerfiles, Terraform, Helm charts,
Kubernetes manifests) is high-risk; SQL DDL counts in lower case too. Through
``git pilot review-budget --json`` on real branches."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import git, make_repo
from test_config_v04 import budget


def feature(tmp_path: Path) -> Path:
    repo = make_repo(tmp_path / "repo", {"README.md": "# demo\n", "src/app.py": "def main():\n    return 1\n",
                                         "docs/guide.md": "# Guide\n"})
    git(repo, "checkout", "-q", "-b", "feature")
    return repo


def write(repo: Path, path: str, text: str) -> None:
    (repo / path).parent.mkdir(parents=True, exist_ok=True)
    (repo / path).write_text(text)


@pytest.mark.parametrize("path", ["docs/migration.md", "MIGRATION.md", "docs/migrations/upgrading-to-v2.md",
                                  "db/migrations/README.md", "guides/data-migration.rst"])
def test_documentation_about_migrations_is_documentation(tmp_path: Path, path: str) -> None:
    repo = feature(tmp_path)
    write(repo, path, "# Migrating\n\nRun the upgrade, then restart.\n")
    b = budget(repo)
    assert (b["class"], b["rounds"]) == ("docs", 0), b["reasons"]


@pytest.mark.parametrize("path", ["db/migrations/0003_add_index.py", "migrations/20240101_init.sql",
                                  "prisma/migrations/20240101/migration.sql", "db/migrate/20240101_users.rb",
                                  "src/main/resources/db/migration/V2__orders.sql", "alembic/versions/ab12_add.py"])
def test_code_or_sql_under_a_migrations_directory_is_a_migration(tmp_path: Path, path: str) -> None:
    repo = feature(tmp_path)
    write(repo, path, "x = 1\n")
    b = budget(repo)
    assert b["class"] == "high-risk"
    assert f"high-risk: {path} is a database migration" in b["reasons"], b["reasons"]


@pytest.mark.parametrize(("path", "kind"), [
    ("Dockerfile", "a container build or compose file"),
    ("docker/Dockerfile.prod", "a container build or compose file"),
    ("services/api/api.dockerfile", "a container build or compose file"),
    ("Containerfile", "a container build or compose file"),
    ("docker-compose.yml", "a container build or compose file"),
    ("compose.yaml", "a container build or compose file"),
    ("main.tf", "Terraform or HCL"),
    ("modules/network/variables.tf", "Terraform or HCL"),
    ("envs/prod.tfvars", "Terraform or HCL"),
    ("terragrunt.hcl", "Terraform or HCL"),
    ("charts/web/Chart.yaml", "a Helm chart"),
    ("charts/web/values.yaml", "a Helm chart"),
    ("charts/web/templates/deployment.yaml", "a Helm chart"),
    ("k8s/deployment.yaml", "deployment configuration"),
    ("deploy/overlays/prod/kustomization.yaml", "deployment configuration"),
    ("kustomization.yaml", "deployment configuration"),
])
def test_infrastructure_files_are_high_risk(tmp_path: Path, path: str, kind: str) -> None:
    repo = feature(tmp_path)
    write(repo, path, "x: 1\n")
    b = budget(repo)
    assert b["class"] == "high-risk", b["reasons"]
    assert f"high-risk: {path} is infrastructure: {kind}" in b["reasons"], b["reasons"]


MANIFEST = """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  template:
    spec:
      containers:
        - name: web
          image: shop/web:1.4.0
"""


def test_a_kubernetes_manifest_anywhere_is_high_risk_even_when_only_its_image_changes(tmp_path: Path) -> None:
    repo = feature(tmp_path)
    write(repo, "ops/web.yaml", MANIFEST)
    write(repo, "config/app.yaml", "apiVersion: 2\nname: shop\n")  # an ordinary YAML file
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "yaml")
    git(repo, "branch", "-f", "main", "HEAD")  # both files exist on the base
    write(repo, "config/app.yaml", "apiVersion: 2\nname: shop2\n")
    b = budget(repo)
    assert (b["class"], b["rounds"]) == ("small", 1), b["reasons"]
    write(repo, "ops/web.yaml", MANIFEST.replace("1.4.0", "1.5.0"))  # the changed line is the image alone
    b = budget(repo)
    assert b["class"] == "high-risk"
    assert "high-risk: ops/web.yaml is infrastructure: a Kubernetes manifest" in b["reasons"], b["reasons"]


@pytest.mark.parametrize(("line", "label"), [
    ('db.execute("create table orders (id integer primary key)")', "SQL DDL (CREATE TABLE)"),
    ("cur.execute('alter table users add column email text')", "SQL DDL (ALTER TABLE)"),
    ('sql = "drop table if exists sessions"', "SQL DDL (DROP TABLE)"),
    ('q = "create unique index idx_email on users (email)"', "SQL DDL (CREATE INDEX)"),
    ('run("grant select on orders to reporting")', "SQL DDL (GRANT SELECT)"),
])
def test_lower_case_sql_ddl_in_code_is_high_risk(tmp_path: Path, line: str, label: str) -> None:
    repo = feature(tmp_path)
    write(repo, "src/app.py", "def main():\n    return 1\n" + line + "\n")
    b = budget(repo)
    assert b["class"] == "high-risk", b["reasons"]
    assert f"high-risk: src/app.py:3 changes a line mentioning {label}" in b["reasons"], b["reasons"]


@pytest.mark.parametrize("line", [
    "# create a user and drop the cache",
    "def create_table_view(rows):",
    "users = drop_tables(schema)",
    "print('create user accounts first')",
])
def test_words_that_are_not_ddl_stay_small(tmp_path: Path, line: str) -> None:
    repo = feature(tmp_path)
    write(repo, "src/app.py", "def main():\n    return 1\n" + line + "\n")
    b = budget(repo)
    assert (b["class"], b["rounds"]) == ("small", 1), b["reasons"]
