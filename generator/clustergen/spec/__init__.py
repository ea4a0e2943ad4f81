"""The spec as written: loading it with positions, its long form, its hosts and names,
the physical plan of racks and switch ports, and its JSON Schema."""
