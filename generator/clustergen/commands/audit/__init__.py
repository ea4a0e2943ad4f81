"""`clustergen audit`: what live nodes report (collect.yml's fact files) against the spec
and the rendered tree. One small parser per tool's output format, `expect.py` for what
the spec and tree say each node should have, `compare.py` for the findings, `run.py`
to put them together (docs/audit.md)."""
