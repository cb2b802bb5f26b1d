-- taskhub-pg 0004 down.
DROP VIEW IF EXISTS
    __SCHEMA__.taskhub_stuck_instances,
    __SCHEMA__.taskhub_session_owners,
    __SCHEMA__.taskhub_poison_candidates,
    __SCHEMA__.taskhub_current_leases,
    __SCHEMA__.taskhub_queue_health;
