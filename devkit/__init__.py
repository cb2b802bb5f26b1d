"""What the tests, the benchmarks and the demo share; never shipped in the wheel
(pyproject.toml's `packages` lists the provider's alone). `schema/` authors
the schema, `workloads/` drives and measures it, `devdb` keeps the development
cluster. The entry points that use it are in scripts/."""
