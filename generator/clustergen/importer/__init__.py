"""`clustergen import slurm`: a running cluster's Slurm files read into a spec (issue 26)."""
