"""clustergen: render and check a GPU training cluster's configuration from one YAML spec."""

__version__ = "0.1.0"
