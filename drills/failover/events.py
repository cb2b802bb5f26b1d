"""The failovers the drill puts the hub through, each ending with the standby
promoted and both proxies repointed at it:

* switchover: a checkpoint, a fast shutdown of the primary (its walsender
  sends everything first), the standby waited for until it replayed the old
  primary's shutdown checkpoint, its last record;
* crash: the primary's clients stopped where they are, the standby waited
  for until it replayed what the primary had flushed, then the primary
  killed as an immediate shutdown does (crash.py: a crash at that instant);
* lagging: the replication link stalled (the replication proxy paused) for
  `lag_s` while the load goes on, then `pg_ctl stop -m immediate`.

Each records the standby's received position once its WAL receiver has
stopped (all the new primary will have) and what the old primary wrote
beyond it (pg_waldump over the old primary's pg_wal).
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import psycopg

from devkit.waiting import wait_until
from drills.failover import wal
from drills.failover.crash import crash_caught_up
from drills.failover.proxy import TcpProxy
from drills.failover.servers import Node, ServerPair

SWITCHOVER = "switchover"
CRASH = "crash"
LAGGING = "lagging"
NAMES = (SWITCHOVER, CRASH, LAGGING)
CATCH_UP_TIMEOUT_S = 60.0


@dataclass(frozen=True)
class Topology:
    pair: ServerPair
    runtime_proxy: TcpProxy  # the released runtime's way to the primary
    replication_proxy: TcpProxy  # the standby's


@dataclass(frozen=True)
class EventRecord:
    name: str
    old_primary: Node
    new_primary: Node
    began_at: float  # Unix time the primary was told to stop
    stopped_at: float  # ... it had stopped: what is acknowledged later is the new one's
    promoted_at: float  # ... the promotion returned and the proxies were repointed
    received: int  # what the standby had received when the primary went
    unreceived: wal.Unreceived  # what the old primary had written beyond it
    stalled_s: float = 0.0  # how long replication was stalled before the crash

    @property
    def outage_s(self) -> float:
        return self.promoted_at - self.began_at


def run_event(name: str, topology: Topology, lag_s: float) -> EventRecord:
    pair = topology.pair
    old, standby = pair.primary, pair.standby
    assert standby is not None, "an event needs a standby"
    stalled_s = 0.0
    if name == SWITCHOVER:
        with pair.connect(old) as conn:
            conn.execute("CHECKPOINT")
        began = time.time()
        old.stop("fast")
        stopped = time.time()
        last = wal.last_checkpoint(pair.bin_dir, old.data_dir)
        _wait_replayed(pair, standby, last, "the old primary's shutdown checkpoint")
    elif name == CRASH:
        began = time.time()
        crash_caught_up(
            pair,
            lambda flushed: _wait_replayed(pair, standby, flushed - 1, "all the primary flushed"),
        )
        stopped = time.time()
    else:
        topology.replication_proxy.pause()
        # The load goes on while the standby falls behind: time is the subject.
        time.sleep(lag_s)
        stalled_s = lag_s
        began = time.time()
        old.stop("immediate")
        stopped = time.time()
        # Nothing still in transit reaches the standby after the crash.
        topology.replication_proxy.drop_connections()
        topology.replication_proxy.resume()
    received = _received_once_stopped(pair, standby)
    new = pair.promote_standby()
    topology.runtime_proxy.repoint(new.port)
    topology.replication_proxy.repoint(new.port)
    promoted = time.time()
    return EventRecord(
        name,
        old,
        new,
        began,
        stopped,
        promoted,
        received,
        wal.unreceived(pair.bin_dir, old.data_dir, received),
        stalled_s,
    )


def _wait_replayed(pair: ServerPair, standby: Node, beyond: int, what: str) -> None:
    wait_until(
        lambda: pair.replayed(standby) > beyond,
        timeout_s=CATCH_UP_TIMEOUT_S,
        message=f"{standby.name} to replay {what} ({wal.lsn_text(beyond)})",
    )


def _received_once_stopped(pair: ServerPair, standby: Node) -> int:
    """The standby's received position once its WAL receiver no longer
    streams from the old primary (the bytes in flight have landed)."""

    def stopped() -> bool:
        with pair.connect(standby) as conn:
            row = conn.execute(
                "SELECT count(*) FROM pg_stat_wal_receiver WHERE status = 'streaming'"
            ).fetchone()
        return row is not None and row[0] == 0

    wait_until(
        stopped,
        timeout_s=CATCH_UP_TIMEOUT_S,
        message=f"{standby.name}'s WAL receiver to stop",
        ignoring=(psycopg.OperationalError,),
    )
    return pair.received(standby)
