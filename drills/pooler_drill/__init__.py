"""The pooler drill: the provider (both faces), the outbox, our ActivityWorker
with renewals and wakeups, the command line, a migration and the released
duroxide 0.2.2 runtime behind Debian's PgBouncer, in transaction and in
session pool mode, with the documented settings; and the same workload with
the defaults and with prepared statements on, to show what the settings
remove.

    python -m drills.pooler_drill [--seconds 6] [--orchestrations 50]   (make pooler-drill)

It prints per mode what ran and every error (class and message, counted),
then a verdict per target, and exits 1 when one is missed.
tests/client/test_pooler.py runs one bounded round in make test.
"""
