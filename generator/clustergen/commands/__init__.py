"""What the commands do above the render and the writer: the parallel render, plan,
the lock, the twin and audit."""
