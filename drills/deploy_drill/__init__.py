"""The deploy drill: the released duroxide 0.2.2 runtime on a live hub, with
orchestrations started at a steady rate, while Alembic migrates the hub as a
pipeline would: up to head from an earlier revision, back down, up again; and
a live duroxide 0.2.2 schema adopted and given back.

    python -m drills.deploy_drill --rounds 20      (make deploy-drill)

It prints the migration runs that succeeded, how long runtime and
application calls waited on a migration, orchestrations failed or wrong,
what the runtime logged at WARN or above, and errors the application saw;
tests/deploy/test_deploy_drill.py runs one bounded round in make test.
"""
