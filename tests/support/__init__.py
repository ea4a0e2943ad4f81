"""Test infrastructure: paths, the CI switch, and the real-consumer testbeds."""
