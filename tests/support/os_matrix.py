"""A spec moved to another operating system, NVIDIA's repository with it: the reference
specs name NVIDIA's ubuntu2204 repository, which checks/platform.py refuses on any other OS."""

from __future__ import annotations

from typing import Any

from clustergen.catalog.distributions import DISTRIBUTIONS, NVIDIA_CUDA_REPOSITORIES


def on_os(software: dict[str, Any], os: str) -> dict[str, Any]:
    """software (a spec's mapping, changed in place) on `os`, each NVIDIA CUDA repository's
    url and key_url pointing at that OS's directory; returned for chaining."""
    software["os"] = os
    codename = DISTRIBUTIONS[os].nvidia_codename
    for repository in software.get("repositories", []):
        for key in ("url", "key_url"):
            value = repository.get(key)
            if isinstance(value, str) and value.startswith(NVIDIA_CUDA_REPOSITORIES):
                rest = value[len(NVIDIA_CUDA_REPOSITORIES) :].split("/", 1)[1]
                repository[key] = f"{NVIDIA_CUDA_REPOSITORIES}{codename}/{rest}"
    return software
