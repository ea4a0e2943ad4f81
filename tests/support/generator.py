"""benchmarks/large_spec.py, the spec generator, imported for tests."""

from __future__ import annotations

import functools
import importlib.util
from types import ModuleType

from support.paths import REPO


@functools.cache
def large_spec_module() -> ModuleType:
    path = REPO / "benchmarks" / "large_spec.py"
    spec = importlib.util.spec_from_file_location("large_spec", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
