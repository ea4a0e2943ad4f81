"""The spec language as pydantic models; no I/O and no cross-section checks here."""

from clustergen.model.root import Spec

__all__ = ["Spec"]
