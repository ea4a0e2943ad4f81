"""The foundations every layer sits on: problem codes and problems, the artifact a
family returns with its install metadata, reports, systemd names, suggestions and the
OpenPGP fingerprint. They import nothing of clustergen above them."""
