"""PyYAML's safe loader, libyaml's where PyYAML was built with it: the files clustergen
reads back thousands of times (fact files' lnetctl reports) or whole (a 65,536-node
tree's versions.lock), where the pure-Python loader is the larger part of the work."""

from __future__ import annotations

import yaml

SAFE_LOADER: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
