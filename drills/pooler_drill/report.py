"""What the drill prints: per mode what ran and every error, counted; then a
verdict per target (only the documented modes have targets)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable

from drills.harness import Verdict
from drills.pooler_drill.latency import TARGET_RATIO
from drills.pooler_drill.runner import LATENCY, RUNTIME, ModeReport, Sizes
from drills.pooler_drill.worker import LEASE_MS, SLOW_S

SHOWN_LINES = 12  # of one kind of list (errors, log lines) per mode
SAID_CHARS = 300  # of what the migration printed
# The documented modes, whose results are targets: each verdict's name.
TRANSACTION, SESSION = "transaction pooling", "session pooling"


def _settings(report: ModeReport) -> str:
    mode = report.mode
    shown = {
        name: ("<the session pooler's URL>" if name == "listen_url" else value)
        for name, value in mode.settings.items()
    }
    hub = ", ".join(f"{name}={value!r}" for name, value in shown.items()) or "none"
    caller = ", ".join(f"{name}={value!r}" for name, value in mode.caller.items()) or "psycopg's"
    return f"hub settings: {hub}; the outbox caller's connection: {caller}"


def _counted(title: str, counts: Counter[str]) -> list[str]:
    if not counts:
        return []
    lines = [f"    {title}:"]
    for text, count in counts.most_common(SHOWN_LINES):
        lines.append(f"      x{count:<6} {text}")
    if len(counts) > SHOWN_LINES:
        lines.append(f"      ... and {len(counts) - SHOWN_LINES} more kinds")
    return lines


def errors_of(report: ModeReport) -> Counter[str]:
    """Every error of the mode's provider, outbox, worker and CLI parts (and a
    part that broke), each under its part's name."""
    found: Counter[str] = Counter()

    def add(part: str, counts: Counter[str]) -> None:
        for text, count in counts.items():
            found[f"{part}: {text}"] += count

    if report.provider is not None:
        add("provider, blocking face", report.provider[0].errors)
        add("provider, asyncio face", report.provider[1].errors)
    if report.outbox is not None:
        add("outbox", report.outbox.tally.errors)
        if report.outbox.wrong:
            found["outbox: starts not as committed or rolled back"] += report.outbox.wrong
    if report.worker is not None:
        add("worker", report.worker.errors)
        stats = report.worker.stats
        for what, count in (
            ("failed", stats.failed),
            ("lost leases", stats.lost),
            ("renewal errors", stats.renewal_errors),
        ):
            if count:
                found[f"worker: {what}"] += count
    if report.cli is not None:
        add("CLI", report.cli.tally.errors)
    if report.migration is not None:
        add("application during the migration", report.migration.background.errors)
    for part, settings in report.left_behind.items():
        for line in settings:
            found[f"{part} left behind on {line}"] += 1
    found.update(report.crashed)
    return found


def _provider_lines(report: ModeReport, sizes: Sizes) -> list[str]:
    if report.provider is None:
        return []
    sync, asynchronous = report.provider
    return [
        f"    provider, blocking face: {sizes.threads} threads, {sizes.seconds:g} s:"
        f" {sync.calls:,} calls, {sync.error_count:,} errors",
        f"    provider, asyncio face: {sizes.threads} tasks, {sizes.seconds:g} s:"
        f" {asynchronous.calls:,} calls, {asynchronous.error_count:,} errors",
    ]


def _outbox_lines(report: ModeReport) -> list[str]:
    found = report.outbox
    if found is None:
        return []
    return [
        f"    outbox: {found.tally.calls:,} calls (order row + start in the caller's"
        f" transaction), {found.tally.error_count:,} errors; committed"
        f" {len(found.committed)}, queued with their row {found.committed_found};"
        f" rolled back {len(found.rolled_back)}, anything left by them {found.rolled_back_found}"
    ]


def _worker_lines(report: ModeReport) -> list[str]:
    found = report.worker
    if found is None:
        return []
    stats = found.stats
    listeners = ", ".join(
        f"pid {pid} ({'a server backend' if backend else 'NOT a server backend'})"
        for pid, backend in found.listeners
    )
    quick = sorted(found.quick_start_ms)
    p50 = f"{quick[len(quick) // 2]:.1f} ms" if quick else "n/a"
    return [
        f"    worker: {found.slow} slow activities ({SLOW_S:g} s on a {LEASE_MS} ms lease)"
        f" and {found.quick} quick ones: completed {stats.completed}, failed {stats.failed},"
        f" renewals {stats.renewals}, renewal errors {stats.renewal_errors},"
        f" lost {stats.lost}",
        f"    worker wakeups: listener {listeners or 'none registered'}; a quick activity"
        f" queued on an idle worker started after p50 {p50} ({len(quick)} samples)",
    ]


def _cli_lines(report: ModeReport) -> list[str]:
    found = report.cli
    if found is None:
        return []
    return [
        f"    CLI ({', '.join(found.verbs)}): {found.tally.calls} runs,"
        f" {found.tally.error_count} errors",
        *_counted("CLI stderr lines (exit 0)", found.warnings),
    ]


def _migration_lines(report: ModeReport) -> list[str]:
    found = report.migration
    if found is None:
        return []
    said = found.output[0][:SAID_CHARS] if len(found.output) == 1 else " / ".join(found.output)
    check = "" if found.check_exit_code is None else f"; check exit {found.check_exit_code}"
    return [
        f"    migration: taskhub-pg upgrade exit {found.exit_code}: {said}{check}",
        f"    after it: schema {'exists' if found.schema_exists else 'absent'},"
        f" revision {found.revision}; advisory locks {len(found.advisory_locks)};"
        f" server connections visited {len(found.visits)}, settings left behind"
        f" {len(found.left_behind)}; the application meanwhile {found.background.calls:,}"
        f" calls, {found.background.error_count} errors",
    ] + [f"      left behind: {line}" for line in found.left_behind]


def _runtime_lines(report: ModeReport) -> list[str]:
    found = report.runtime
    if found is None:
        return []
    lines = []
    if found.not_started:
        lines.append(f"    runtime 0.2.2: workers not ready: {found.not_started}")
    outcome = found.outcome
    if outcome is not None:
        lines.append(
            f"    runtime 0.2.2: client connects {found.connects.calls}, refused"
            f" {found.connects.error_count}; starts by {found.started_by} {found.started.calls},"
            f" refused"
            f" {found.started.error_count};"
            f" of {outcome.orchestrations} started: completed correctly {outcome.completed},"
            f" failed {outcome.failed}, wrong {outcome.wrong_output}, unfinished"
            f" {outcome.unfinished}, dead letters {outcome.dead_letters},"
            f" shielded failures {outcome.shielded_failures}"
        )
        lines += _counted("orchestration failures", outcome.failure_messages)
    if found.leaked_locks:
        pids = sorted({lock[0] for lock in found.leaked_locks})
        lines.append(
            f"    runtime 0.2.2: {len(found.leaked_locks)} advisory locks held on pooled server"
            f" connections (pids {pids}) after its workers stopped"
        )
    lines += _counted("runtime client's connect errors", found.connects.errors)
    lines += _counted("runtime client's start errors", found.started.errors)
    lines += _counted("runtime log at WARN or above", found.runtime_log)
    return lines


def _latency_lines(report: ModeReport) -> list[str]:
    found = report.latency
    if found is None:
        return []
    pooled = report.mode.pool_mode
    return [
        "    push wakeup latency, idle worker, queued -> handler started:"
        + "".join(
            f" {path} p50 {found.p50(path):.1f} ms"
            f" (max {max(samples):.1f}, {len(samples)} samples);"
            for path, samples in found.samples_ms.items()
        )
        + f" ratio {found.ratio(pooled, 'direct'):.2f}x"
    ]


def mode_lines(report: ModeReport, sizes: Sizes) -> list[str]:
    lines = [f"== {report.mode.title} ==", f"    {_settings(report)}"]
    for part in (
        _provider_lines(report, sizes),
        _outbox_lines(report),
        _worker_lines(report),
        _cli_lines(report),
        _migration_lines(report),
        _runtime_lines(report),
        _latency_lines(report),
    ):
        lines += part
    lines += [f"    BROKE: {text}" for text in report.crashed]
    errors = errors_of(report)
    lines.append(f"    errors: {sum(errors.values()):,}")
    lines += _counted("every error", errors)[1:]
    lines += _counted("the provider's log at WARNING or above", report.warnings)
    return lines


def _find(reports: Iterable[ModeReport], pool_mode: str) -> ModeReport | None:
    return next((r for r in reports if r.mode.documented and r.mode.pool_mode == pool_mode), None)


def _calls(report: ModeReport) -> int:
    total = 0
    if report.provider is not None:
        total += report.provider[0].calls + report.provider[1].calls
    if report.outbox is not None:
        total += report.outbox.tally.calls
    if report.cli is not None:
        total += report.cli.tally.calls
    return total


def verdicts(reports: list[ModeReport]) -> list[Verdict]:
    """A verdict per target, named by its pool mode."""
    found: list[Verdict] = []
    transaction = _find(reports, "transaction")
    if transaction is not None:
        errors = sum(errors_of(transaction).values())
        worker = transaction.worker
        found.append(
            Verdict(
                TRANSACTION,
                errors == 0 and not transaction.warnings,
                f"errors from the provider, the outbox, the worker and the CLI: {errors}"
                f" (of {_calls(transaction):,} calls)",
            )
        )
        renewed = worker is not None and worker.stats.renewals >= 2 * worker.slow
        found.append(
            Verdict(
                TRANSACTION,
                renewed and worker is not None and worker.stats.lost == 0,
                "slow activities kept their leases: "
                + (
                    f"{worker.stats.renewals} renewals, {worker.stats.lost} lost"
                    if worker
                    else "did not run"
                ),
            )
        )
        found.append(_wakeups_registered(f"{TRANSACTION} (listen_url)", transaction))
        found.append(_migration_refused(transaction))
    session = _find(reports, "session")
    if session is not None:
        errors = sum(errors_of(session).values())
        found.append(
            Verdict(
                SESSION,
                errors == 0 and not session.warnings,
                f"errors from the provider, the outbox, the worker and the CLI: {errors}"
                f" (of {_calls(session):,} calls)",
            )
        )
        found.append(_wakeups_registered(SESSION, session))
        found.append(_migration_works(session))
        if LATENCY in session.mode.parts:
            found.append(_latency_within(session))
        if RUNTIME in session.mode.parts:
            found.append(_runtime_correct(session))
    return found


def _wakeups_registered(label: str, report: ModeReport) -> Verdict:
    listeners = report.worker.listeners if report.worker else []
    ok = bool(listeners) and all(backend for _, backend in listeners)
    return Verdict(label, ok, f"the wakeup listener registered a server backend's pid: {listeners}")


def _migration_refused(report: ModeReport) -> Verdict:
    found = report.migration
    if found is None:
        return Verdict(TRANSACTION, False, "migration did not run")
    nothing_left = found.revision is None and not found.advisory_locks and not found.left_behind
    return Verdict(
        TRANSACTION,
        found.refused_in_one_line and nothing_left,
        "taskhub-pg upgrade refused in one line before any revision"
        f" (exit {found.exit_code}, {len(found.output)} line(s)), nothing left behind"
        f" (revision {found.revision}, advisory locks {len(found.advisory_locks)},"
        f" settings left on {len(found.left_behind)} of {len(found.visits)} server connections)",
    )


def _migration_works(report: ModeReport) -> Verdict:
    found = report.migration
    if found is None:
        return Verdict(SESSION, False, "migration did not run")
    ok = (
        found.exit_code == 0
        and found.check_exit_code == 0
        and found.revision is not None
        and not found.advisory_locks
        and not found.left_behind
    )
    return Verdict(
        SESSION,
        ok,
        f"taskhub-pg upgrade exit {found.exit_code}, revision {found.revision},"
        f" check exit {found.check_exit_code}, advisory locks {len(found.advisory_locks)},"
        f" settings left behind {len(found.left_behind)}",
    )


def _latency_within(report: ModeReport) -> Verdict:
    found = report.latency
    if found is None:
        return Verdict(SESSION, False, "push wakeup latency not measured")
    ratio = found.ratio("session", "direct")
    return Verdict(
        SESSION,
        ratio <= TARGET_RATIO,
        f"push wakeup p50 {found.p50('session'):.1f} ms against"
        f" {found.p50('direct'):.1f} ms direct: {ratio:.2f}x (target <= {TARGET_RATIO:g}x)",
    )


def _runtime_correct(report: ModeReport) -> Verdict:
    found = report.runtime
    outcome = found.outcome if found else None
    if found is None or outcome is None:
        return Verdict(SESSION, False, "the released runtime did not run")
    return Verdict(
        SESSION,
        found.correct,
        f"the released runtime's mix: {outcome.completed} of"
        f" {outcome.orchestrations} completed correctly ({found.started.error_count} starts"
        f" refused, {sum(found.runtime_log.values())} runtime WARN+ lines)",
    )
