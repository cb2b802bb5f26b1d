"""prune_batches, the loop both `taskhub-pg prune` and the dashboard's prune
run over TaskHub.prune_ended: it asks for no more than the limit leaves, and
stops at the limit or at the first batch that deletes nothing (a fake of
prune_ended here; tests/sql/test_prune_ended.py runs the procedure)."""

from __future__ import annotations

from provider import PrunedBatch
from provider.client.management import prune_batches


class Backlog:
    """prune_ended over `roots` ended roots, each with one child."""

    def __init__(self, roots: int) -> None:
        self.roots, self.asked = roots, list[int]()

    def prune_ended(self, completed_before_ms: int, batch_size: int) -> PrunedBatch:
        assert completed_before_ms == 123
        self.asked.append(batch_size)
        taken = min(batch_size, self.roots)
        self.roots -= taken
        return PrunedBatch(roots_deleted=taken, instances_deleted=2 * taken)


def test_it_works_the_backlog_off_and_stops_at_the_first_empty_batch() -> None:
    backlog = Backlog(1_050)
    batches = list(prune_batches(backlog.prune_ended, 123, batch_size=500))
    assert [b.roots_deleted for b in batches] == [500, 500, 50]
    assert backlog.asked == [500, 500, 500, 500]  # the last one found nothing
    assert sum(batches, PrunedBatch()) == PrunedBatch(1_050, 2_100)


def test_a_limit_asks_for_no_more_than_it_leaves() -> None:
    backlog = Backlog(5_000)
    batches = list(prune_batches(backlog.prune_ended, 123, batch_size=400, limit=1_000))
    assert backlog.asked == [400, 400, 200]
    assert sum(b.roots_deleted for b in batches) == 1_000 and backlog.roots == 4_000
