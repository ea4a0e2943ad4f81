"""Where the repository, its examples and the shared reference material are."""

from __future__ import annotations

from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "examples"
REFERENCE_SPECS = sorted(EXAMPLES.glob("*.yaml"))
# The rack-scale example (GB200 NVL72: NVLink domains, IMEX, power shelves, liquid
# cooling), the examples with NVLink domains (it and Vera Rubin NVL72, which has no
# power figures), and the examples without any of that, for tests of what those leave out.
RACK_SCALE_EXAMPLE = EXAMPLES / "gb200-nvl72-4rack.yaml"
NVLINK_DOMAIN_EXAMPLES = [RACK_SCALE_EXAMPLE, EXAMPLES / "vera-rubin-nvl72-spectrumx.yaml"]
CLASSIC_SPECS = [path for path in REFERENCE_SPECS if path not in NVLINK_DOMAIN_EXAMPLES]
README = REPO / "README.md"
SCHEMA = REPO / "schemas" / "clustergen.schema.json"
TESTS = REPO / "tests"
# The golden trees of the specs the repository does not render at its top; the
# 8-node reference's is the top itself (support.trees.golden_dir).
GOLDEN = TESTS / "golden"
# The spec this repository renders at its top: a link to examples/ml-training-8node.yaml.
ROOT_SPEC = REPO / "spec.yaml"
INVALID = TESTS / "invalid"
WARNING_CASES = TESTS / "warnings"  # valid specs with warnings, beside their exact output
DATA = TESTS / "data"
# ../shared beside the clone: the reference specs and facts every developer and CI has.
SHARED = REPO.parent / "shared"
