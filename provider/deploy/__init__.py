"""The deploy layer: Alembic glue, SQL file rendering, runtime roles and the
command line. The only importer of alembic."""
