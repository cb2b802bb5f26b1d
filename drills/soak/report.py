"""The soak's report: a row per minute, the hub's tables after warm-up and at
the end, the retention job's runs, and a plot of the same minutes."""

from __future__ import annotations

from pathlib import Path

from drills.soak.retention import PruneRun
from drills.soak.sampler import QUEUE_AND_LEASE_TABLES, Minute
from drills.soak.verdicts import quantile
from drills.soak.watch import AUTOVACUUM, HOT_PATH, RETENTION

CPU_COLUMNS = (HOT_PATH, RETENTION, AUTOVACUUM)

PYTHON_WORKER = "python worker"
RUNTIME = "runtime"

MINUTE_COLUMNS = (
    "min  done/s  p50 ms  p99 ms  failed  queues MB  hub MB  instances"
    "  q dead  q HOT%  autovac  py RSS MB  py conn  rt RSS MB  rt conn  server conn"
    "  pruned  prune s  vacuums  vacuum s  lock ms  call ms  top wait       cpu% hot/ret/vac"
)


def _rss_mb(minute: Minute, role: str) -> float:
    return sum(p.rss_kb for p in minute.processes.get(role, [])) / 1024


def _queue_counters(minute: Minute, previous: Minute | None) -> tuple[int, float, int]:
    """Dead tuples now, HOT share of this minute's updates, autovacuum runs this minute."""
    dead = sum(minute.tables[t].dead for t in QUEUE_AND_LEASE_TABLES)
    updates = hot = vacuums = 0
    for name in QUEUE_AND_LEASE_TABLES:
        now, before = minute.tables[name], previous.tables[name] if previous else None
        updates += now.updates - (before.updates if before else 0)
        hot += now.hot_updates - (before.hot_updates if before else 0)
        vacuums += now.autovacuums - (before.autovacuums if before else 0)
    return dead, (100.0 * hot / updates if updates else 100.0), vacuums


def minute_row(minute: Minute, previous: Minute | None, connections: dict[str, str]) -> str:
    dead, hot_share, vacuums = _queue_counters(minute, previous)
    failed = f"{minute.deliberate_failures()}/{minute.unexpected_failures()}"
    return (
        f"{minute.minute:>3}  {minute.rate:>6.2f}"
        f"  {quantile(minute.timed_ms, 0.5):>6.0f}  {quantile(minute.timed_ms, 0.99):>6.0f}"
        f"  {failed:>6}  {minute.queue_and_lease_bytes / 1e6:>9.2f}"
        f"  {minute.hub_bytes / 1e6:>6.1f}  {minute.instances:>9}"
        f"  {dead:>6}  {hot_share:>6.0f}  {vacuums:>7}"
        f"  {_rss_mb(minute, PYTHON_WORKER):>9.1f}"
        f"  {minute.connections[connections[PYTHON_WORKER]]:>7}"
        f"  {_rss_mb(minute, RUNTIME):>9.1f}"
        f"  {minute.connections[connections[RUNTIME]]:>7}"
        f"  {sum(minute.connections.values()):>11}"
        f"  {_where_time_went(minute, previous)}"
    )


def _where_time_went(minute: Minute, previous: Minute | None) -> str:
    """Retention's runs that ended this minute (instances deleted, seconds),
    autovacuum on any hub table (runs ended, seconds sampled at work), the
    hot path's longest lock wait and longest call, its most sampled wait, and
    the server's CPU by whom it served."""
    watch = minute.watch
    vacuums = minute.autovacuums - (previous.autovacuums if previous else 0)
    pruned = sum(run.instances_deleted for run in minute.prunes)
    prune_s = sum(run.seconds for run in minute.prunes)
    cpu = (
        "/".join(f"{watch.cpu_percent(role, minute.seconds):.0f}" for role in CPU_COLUMNS)
        if watch.cpu_known
        else "-"
    )
    return (
        f"{pruned:>6}  {prune_s:>7.1f}  {vacuums:>7}  {watch.autovacuum_s:>8.1f}"
        f"  {watch.longest_lock_wait_ms:>7.0f}  {watch.longest_call_ms:>7.0f}"
        f"  {watch.top_wait():<13}  {cpu:>16}"
    )


def table_summary(after_warm_up: Minute, end: Minute) -> list[str]:
    """Each hub table with rows: after warm-up and at the end, and what the
    measured minutes did to it (HOT share of updates, autovacuum runs)."""
    lines = [
        "table                     heap+idx+toast KB (warm -> end)   live -> end"
        "   dead -> end   HOT% of updates  autovacuums"
    ]
    for name in sorted(end.tables):
        before, now = after_warm_up.tables.get(name), end.tables[name]
        if before is None or (now.live == 0 and now.updates == 0 and before.live == 0):
            continue
        updates = now.updates - before.updates
        hot = 100.0 * (now.hot_updates - before.hot_updates) / updates if updates else None
        lines.append(
            f"{name:<24}  {before.heap // 1024:>5}+{before.indexes // 1024}+{before.toast // 1024}"
            f" -> {now.heap // 1024}+{now.indexes // 1024}+{now.toast // 1024}".ljust(60)
            + f"{before.live:>6} -> {now.live:<6} {before.dead:>5} -> {now.dead:<6}"
            + f"  {'-' if hot is None else f'{hot:.0f}':>6} ({updates})"
            + f"  {now.autovacuums - before.autovacuums:>5}"
        )
    return lines


def prune_summary(runs: list[PruneRun]) -> list[str]:
    if not runs:
        return ["retention: no run yet"]
    deleted = [r.instances_deleted for r in runs if r.error is None]
    seconds = sorted(r.seconds for r in runs)
    errors = [r for r in runs if r.error is not None]
    lines = [
        f"retention: {len(runs)} runs of taskhub-pg prune, {sum(deleted)} instances deleted,"
        f" {max(deleted, default=0)} at most in one run; a run took"
        f" {seconds[len(seconds) // 2]:.1f} s (median), {seconds[-1]:.1f} s at most;"
        f" {len(errors)} failed"
    ]
    lines += [f"  at {r.at_s:.0f} s: {r.error}" for r in errors[:5]]
    return lines


def can_plot() -> bool:
    """matplotlib comes with the bench extra (make soak installs it; the
    suite's bounded soak runs without it)."""
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        return False
    return True


def plot(minutes: list[Minute], path: Path, title: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    x = [m.minute for m in minutes]
    figure, axes = plt.subplots(2, 2, figsize=(12, 7), sharex=True)
    done, latency, size, memory = axes.flat
    done.plot(x, [m.rate for m in minutes], marker=".")
    done.set_ylabel("completions/s")
    latency.plot(x, [quantile(m.timed_ms, 0.5) for m in minutes], label="p50")
    latency.plot(x, [quantile(m.timed_ms, 0.99) for m in minutes], label="p99")
    latency.set_ylabel("start to completion, ms")
    latency.legend()
    size.plot(x, [m.queue_and_lease_bytes / 1e6 for m in minutes], label="queues + leases")
    size.plot(x, [m.hub_bytes / 1e6 for m in minutes], label="whole hub")
    size.set_ylabel("MB")
    size.legend()
    memory.plot(x, [_rss_mb(m, PYTHON_WORKER) for m in minutes], label=PYTHON_WORKER)
    memory.plot(x, [_rss_mb(m, RUNTIME) for m in minutes], label="runtime processes")
    memory.set_ylabel("RSS, MB")
    memory.legend()
    for axis in axes[1]:
        axis.set_xlabel("minute")
    for axis in axes.flat:
        axis.set_ylim(bottom=0)
        axis.grid(alpha=0.3)
    figure.suptitle(title)
    figure.tight_layout()
    figure.savefig(path, dpi=100)
    plt.close(figure)
