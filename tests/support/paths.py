"""Where the repository, its examples and the shared reference material are."""

from __future__ import annotations

from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "examples"
REFERENCE_SPECS = sorted(EXAMPLES.glob("*.yaml"))
GOLDEN = REPO / "tests" / "golden"
INVALID = REPO / "tests" / "invalid"
# ../shared beside the clone: the reference specs and facts every developer and CI has.
SHARED = REPO.parent / "shared"
