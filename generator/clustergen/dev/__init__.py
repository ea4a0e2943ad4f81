"""Tools for clustergen's own development, not used by the command: the large-spec
generator the benchmarks and the scale tests share (large_spec)."""
