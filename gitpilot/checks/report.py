"""``git pilot check``: what is shown of a run of the checks, and the command that runs and shows them.

The engine (``gitpilot/checks/engine.py``) and the range runner (``gitpilot/checks/range.py``)
decide, run and record; this module prints: PASS lines and bounded failure excerpts (or, with
LeanLoop off, the v0.4 form: every check's whole output), the ``--json`` form, and the quiet
checks' entry in the efficiency ledger, which counts the bytes of the text form.

Imported on the cache-hit hot path: no click, no pygit2.
"""

from __future__ import annotations

import re
from pathlib import Path

from gitpilot import output
from gitpilot.checks.engine import CheckOptions, Outcome, check_worktree, select_checks
from gitpilot.checks.scope import describe
from gitpilot.config import CheckSpec, Config, load
from gitpilot.repo import Repo

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from gitpilot.checks.range import Commit

# Every credential gitpilot.redact knows has one of these; a command without them is shown as
# it is, so a cache hit never pays for importing the redaction rules.
_MAY_HOLD_SECRET = re.compile(r"[A-Za-z0-9]{16}|xox|eyJ|pass|secret|token|key|auth|://", re.IGNORECASE)


def shown_command(cmd: str) -> str:
    """A check's command as output shows it: credentials in it are redacted."""
    if not _MAY_HOLD_SECRET.search(cmd):
        return cmd
    from gitpilot.redact import redact

    return redact(cmd)


def run_checks(cwd: Path, opts: CheckOptions) -> int:
    """Run the configured checks in the working tree at ``cwd`` (or over ``opts.range``) and print
    what happened; 1 when a check failed or its result could not be recorded."""
    repo = Repo.discover(cwd)
    cfg = load(repo.workdir, cache=repo.worktree_pilot_dir / "config.cache")
    for w in cfg.warnings:
        output.err(f"warning: {w}")
    checks = select_checks(cfg, opts)
    if opts.range is not None:
        return _run_range(repo, cfg, checks, opts)
    run = check_worktree(repo, cfg, checks, opts)
    outcomes = run.outcomes
    record_quiet_checks(repo, outcomes)
    skipped = [c.name for c in run.skipped]
    if opts.json:
        import json

        # the scoped-only hit, which leaves the whole tree's id out, never serves --json
        assert run.first.full is not None and run.final.full is not None
        data = as_json(run.first.full, run.final.full, outcomes)
        data["skipped"] = skipped  # not run: --bail stopped at a failure before them
        output.out(json.dumps(data, indent=2, sort_keys=True))
    elif not cfg.get("leanloop.enabled"):
        render_plain(outcomes)
        if skipped:
            output.out(bail_line(skipped))
    else:
        for line in render(outcomes, opts.explain, skipped):
            output.out(line)
    if run.lost is not None:
        output.err(f"git pilot: check results not recorded: {run.lost}")
        return 1
    return 1 if any(o.result == "fail" for o in outcomes) else 0


def record_quiet_checks(repo: Repo, outcomes: list[Outcome]) -> bool:
    """Quiet checks in the efficiency ledger: the lines printed for the checks that ran vs their
    full logs (kept on disk).

    Reused passes are left out (they have no log; check-pass reuse is its own saving). The
    printed bytes are those of the text form (``render``), PASS lines or the failure excerpt.
    A cache hit never gets here with anything to record.
    """
    ran = [o for o in outcomes if o.reused is None and o.log_path]
    if not ran:
        return False
    from gitpilot.efficiency import record

    shown = sum(len(line.encode("utf-8")) + 1 for line in render(ran, False))
    log_bytes = sum(o.log_size for o in ran)
    excerpt = sum(len(line.encode("utf-8")) + 1 for o in ran for line in o.excerpt)
    failed = sum(1 for o in ran if o.result == "fail")
    return record(repo, "quiet-checks", shown, max(0, log_bytes - excerpt), checks=len(ran), failed=failed,
                  log_bytes=log_bytes)


def render_plain(outcomes: list[Outcome]) -> None:
    """LeanLoop off: the v0.4 behaviour, every check's whole output as it ran, then its verdict."""
    for o in outcomes:
        output.out(f"$ {shown_command(o.check.run)}")
        if o.log_path is not None:
            from gitpilot.checks.logscan import file_chunks

            for chunk in file_chunks(o.log_path):
                output.write(chunk)
        verdict = "passed" if o.result == "pass" else ("timed out" if o.timed_out else f"failed (exit {o.exit_code})")
        output.out(f"{o.check.name}: {verdict}")


def bail_line(skipped: list[str]) -> str:
    return f"skipped (--bail): {', '.join(skipped)}"


def render(outcomes: list[Outcome], explain: bool, skipped: list[str] | None = None) -> list[str]:
    """The text output; ``skipped``: the checks --bail did not run, named before the summary."""
    lines: list[str] = []
    for o in outcomes:
        cmd = shown_command(o.check.run)
        if o.reused is not None:
            r = o.reused
            via = f" via {r.remote}" if r.remote else ""
            lines.append(f"{output.paint('PASS', 'green')} {cmd} (reused: passed {r.time} by {r.email or r.host}{via})")
        elif o.result == "pass":
            count = f" · {o.passed_count} passed" if o.passed_count is not None else ""
            lines.append(f"{output.paint('PASS', 'green')} {cmd} ({o.seconds:.1f}s){count}")
        else:
            if o.timed_out:
                lines.append(f"{output.paint('FAIL', 'red')} {cmd} timed out after {o.minutes:g} min")
            else:
                lines.append(f"{output.paint('FAIL', 'red')} {cmd} exit {o.exit_code} ({o.seconds:.1f}s)")
            lines.append(f"log: {o.log_path} ({output.human_size(o.log_size)})")
            lines.append(f"excerpt: {o.excerpt_shown} of {o.excerpt_total} lines")
            lines.extend(o.excerpt)
        if o.flaky:
            lines.append(f"flaky: {o.check.name} both passed and failed on this tree")
        if o.not_recorded_reason:
            lines.append(f"{o.not_recorded_reason} ({o.check.name})")
        if explain:
            lines.append(f"explain: {o.check.name}: {o.reason}")
            if o.check.files:
                lines.append(f"explain: {o.check.name}: scope {describe(o.check)}; keyed by the tree of those files, {o.tree}")
    passed = sum(1 for o in outcomes if o.result == "pass")
    failed = [o for o in outcomes if o.result == "fail"]
    summary = f"checks: {passed} passed, {len(failed)} failed"
    reused = sum(1 for o in outcomes if o.reused is not None)
    if reused:
        summary += f" ({reused} reused)"
    if skipped:
        lines.append(bail_line(skipped))
        summary += f", {len(skipped)} skipped"
    if failed:
        summary += f" · full log: git pilot check --log {failed[0].check.name}"
    lines.append(summary)
    return lines


def outcome_json(o: Outcome) -> dict[str, Any]:
    """One check's outcome as ``--json`` gives it."""
    item: dict[str, Any] = {
        "name": o.check.name,
        "tree": o.tree,
        "command": shown_command(o.check.run),
        "result": o.result,
        "reused": o.reused is not None,
        "seconds": round(o.seconds, 3),
        "exit": o.exit_code,
        "timed_out": o.timed_out,
        "flaky": o.flaky,
        "recorded": o.recorded,
        "reason": o.reason,
    }
    if o.check.files:
        item["files"] = list(o.check.files)  # "tree" is then the tree of the matching files
    if o.reused is not None:
        item["reused_from"] = {"time": o.reused.time, "email": o.reused.email, "host": o.reused.host,
                               "platform": o.reused.platform, "remote": o.reused.remote}
    if o.passed_count is not None:
        item["passed_count"] = o.passed_count
    if o.result == "fail":
        item.update({"log": str(o.log_path), "log_bytes": o.log_size, "excerpt": o.excerpt,
                     "excerpt_lines": o.excerpt_shown, "log_lines": o.excerpt_total})
    if o.not_recorded_reason:
        item["not_recorded"] = o.not_recorded_reason
    return item


def as_json(tree: str, final_tree: str, outcomes: list[Outcome]) -> dict[str, Any]:
    return {
        "tree": tree,  # the checked state when the run began
        "final_tree": final_tree,  # and when it ended (differs when a check changed the working tree)
        "checks": [outcome_json(o) for o in outcomes],
        "passed": sum(1 for o in outcomes if o.result == "pass"),
        "failed": sum(1 for o in outcomes if o.result == "fail"),
    }


# -- --range ---------------------------------------------------------------------------------
def _run_range(repo: Repo, cfg: Config, checks: list[CheckSpec], opts: CheckOptions) -> int:
    import json
    from contextlib import closing

    from gitpilot.checks.range import RangeRun

    assert opts.range is not None
    run = RangeRun(repo, cfg, checks, opts)
    done: list[tuple[Commit, list[Outcome]]] = []
    with closing(iter(run)) as commits:  # the temporary worktree goes, whatever happens here
        for commit, outcomes in commits:
            record_quiet_checks(repo, outcomes)
            done.append((commit, outcomes))
            if not opts.json:
                for line in commit_lines(commit, outcomes):
                    output.out(line)
    failed = any(o.result == "fail" for _, outs in done for o in outs)
    if opts.json:
        output.out(json.dumps(range_json(opts.range, run.commits, done), indent=2, sort_keys=True))
    else:
        for line in summary_lines(opts.range, run.commits, done, opts.explain):
            output.out(line)
    if run.lost is not None:
        output.err(f"git pilot: check results not recorded: {run.lost}")
        return 1
    return 1 if failed else 0


def _detail(o: Outcome) -> str:
    if o.reused is not None:
        return "reused"
    if o.result == "pass":
        return f"{o.seconds:.1f}s" + (f" · {o.passed_count} passed" if o.passed_count is not None else "")
    how = f"timed out after {o.minutes:g} min" if o.timed_out else f"exit {o.exit_code} ({o.seconds:.1f}s)"
    return f"{how} · log: {o.log_path}"


def commit_lines(commit: Commit, outcomes: list[Outcome]) -> list[str]:
    """One line per check of the commit."""
    subject = commit.subject if len(commit.subject) <= 50 else commit.subject[:49] + "…"
    lines = []
    for o in outcomes:
        verdict = output.paint("PASS", "green") if o.result == "pass" else output.paint("FAIL", "red")
        lines.append(f"{verdict} {commit.sha[:12]} {o.check.name}: {_detail(o)}  {subject}")
        if o.not_recorded_reason:
            lines.append(f"{o.not_recorded_reason} ({commit.sha[:12]} {o.check.name})")
    return lines


def summary_lines(spec: str, commits: list[Commit], done: list[tuple[Commit, list[Outcome]]],
                  explain: bool) -> list[str]:
    if not commits:
        return [f"range {spec}: no commits"]
    outs = [o for _, outcomes in done for o in outcomes]
    passed = sum(1 for o in outs if o.result == "pass")
    reused = sum(1 for o in outs if o.reused is not None)
    failing = [(c, o) for c, outcomes in done for o in outcomes if o.result == "fail"]
    bad_commits = len({c.sha for c, _ in failing})
    line = (f"range {spec}: {len(done)} of {len(commits)} commits checked, {passed} passed"
            f"{f' ({reused} reused)' if reused else ''}, {len(failing)} failed")
    if failing:
        line += f" on {bad_commits} commit{'s' if bad_commits != 1 else ''}"
    lines = [line]
    if len(done) < len(commits):
        lines.append(f"stopped at the first failing commit (--bail): {len(commits) - len(done)} not checked")
    if failing:
        c, o = failing[0]
        lines.append(f"first failure: {c.sha[:12]} {o.check.name} ({shown_command(o.check.run)}) "
                     f"· excerpt {o.excerpt_shown} of {o.excerpt_total} lines")
        lines.extend(o.excerpt)
    if explain:
        for c, outcomes in done:
            lines.extend(f"explain: {c.sha[:12]} {o.check.name}: {o.reason} (tree {o.tree})" for o in outcomes)
    return lines


def range_json(spec: str, commits: list[Commit], done: list[tuple[Commit, list[Outcome]]]) -> dict[str, object]:
    outs = [o for _, outcomes in done for o in outcomes]
    return {
        "range": spec,
        "commits": [{"commit": c.sha, "tree": c.tree, "subject": c.subject,
                     "checks": [outcome_json(o) for o in outcomes]} for c, outcomes in done],
        "commits_in_range": len(commits),
        "passed": sum(1 for o in outs if o.result == "pass"),
        "failed": sum(1 for o in outs if o.result == "fail"),
        "reused": sum(1 for o in outs if o.reused is not None),
    }
