"""Tools for clustergen's own development, not used by the command and not in the wheel:
the large-spec generator the benchmarks and the scale tests share (large_spec), and the
generators of the README's key table (keyref) and docs/errors.md (codes_doc)."""
