"""Output families. Each renders artifacts from the resolved cluster (see
docs/architecture.md for adding one); the Ansible family installs them and the
site family carries the playbooks and roles.

A family is a module or package of this folder with a `render(cluster, env)`
function: it is found here, by its name, with nothing to list. Two module-level
declarations say how the site treats it (both optional):

- `INSTALLED = False`: none of its files goes onto a node (the facility sheets, the
  acceptance jobs); it stays in the output tree and a large spec renders it in a second
  process beside the rest (clustergen.commands.parallel).
- `OWN_ROLE = True`: a role of its own includes rendered_files for it
  (`rendered_files_family: <family>`), and defines the handlers its changes notify. A
  family without one is installed by the site's `families` role on every node its
  files go to, which also enables and starts the units it installs with `start` and
  restarts a service its change names (docs/architecture.md, "Adding an output family").
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable
from types import ModuleType

import jinja2

from clustergen.base.artifacts import Artifact
from clustergen.resolve import ResolvedCluster

Family = Callable[[ResolvedCluster, jinja2.Environment], list[Artifact]]

# The modules of this folder that are not content families: they consume the families'
# artifacts (the Ansible family) or carry the site files.
SITE_SIDE = frozenset({"ansible", "site"})


def _modules() -> dict[str, ModuleType]:
    names = sorted(
        info.name for info in pkgutil.iter_modules(__path__) if info.name not in SITE_SIDE
    )
    return {name: importlib.import_module(f"{__name__}.{name}") for name in names}


_MODULES = _modules()

# The content families, by name: the name is the family's directory in the output
# tree and the value of `family` in the install lists Ansible reads.
FAMILIES: dict[str, Family] = {name: module.render for name, module in _MODULES.items()}

# The families whose files stay in the output tree (INSTALLED = False).
UNINSTALLED = frozenset(
    name for name, module in _MODULES.items() if not getattr(module, "INSTALLED", True)
)

# The families installed by a role of their own (OWN_ROLE = True); the others by the
# site's `families` role.
OWN_ROLE = frozenset(
    name for name, module in _MODULES.items() if getattr(module, "OWN_ROLE", False)
)
