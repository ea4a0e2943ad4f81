"""The Ansible site repository: playbooks, ansible.cfg, requirements.yml and roles/.

They are copied byte for byte into every rendered tree, so the tree applies with
nothing but clustergen's wheel and Ansible installed, and upgrading clustergen
shows every role change as a diff in the site's pull request (`render --check`
covers them too). Their one source is the top level of the clustergen
repository; the wheel carries them as the `clustergen/site/` folder.
"""

from __future__ import annotations

from pathlib import Path

from clustergen.base.artifacts import Artifact

PLAYBOOK_FILES = ("site.yml", "verify.yml", "collect.yml", "ansible.cfg", "requirements.yml")
ROLES_DIR = "roles"
# Editor and Python droppings that are never part of a role.
_NOT_CONTENT = ("__pycache__", ".pyc", ".swp", "~")


def site_root() -> Path:
    """Where the site files are: inside the installed wheel, else the source checkout."""
    package = Path(__file__).resolve().parent.parent
    packaged = package / "site"
    if packaged.is_dir():
        return packaged
    # A source checkout (editable install): generator/clustergen/ -> the repository root.
    checkout = package.parent.parent
    if all((checkout / name).is_file() for name in PLAYBOOK_FILES):
        return checkout
    raise FileNotFoundError(f"the Ansible site files are neither in {packaged} nor in {checkout}")


def site_paths(root: Path) -> list[str]:
    """Every site file, relative to root, in a stable order."""
    roles = root / ROLES_DIR
    role_files = [
        path.relative_to(root).as_posix()
        for path in roles.rglob("*")
        if path.is_file() and not _is_dropping(path.relative_to(roles))
    ]
    return sorted([*PLAYBOOK_FILES, *role_files])


def render() -> list[Artifact]:
    root = site_root()
    return [Artifact(path, (root / path).read_text(encoding="utf-8")) for path in site_paths(root)]


def _is_dropping(relative: Path) -> bool:
    return any(
        part.startswith(".") or part.endswith(_NOT_CONTENT) or part in _NOT_CONTENT
        for part in relative.parts
    )
