"""Slurm's major releases: when each came out, when SchedMD's support for it ends, and
which releases its slurmdbd and slurmctld convert state from (an in-place upgrade).

Sources:
- released: the date of SchedMD's tag slurm-YY-MM-0-1 (github.com/SchedMD/slurm).
- end of support: SchedMD's Upgrade Guide (slurm.schedmd.com/upgrades.html, "Slurm
  Release / Revised End of Support"): 18 months after the release (23.02: November
  2024, 21 months). Before that table, SchedMD supported the two latest releases of a
  9-month cycle (schedmd.com/support.php), so 22.05's support ended with 23.11. The
  guide's row for 26.05 reads "November 2028 (18 months)"; 18 months after May 2026 is
  November 2027, which is what this table keeps.
- upgrades from: each release's RELEASE_NOTES ("Slurm can be upgraded from version ...
  without loss of jobs or other state information"; from 25.05 RELEASE_NOTES.md
  "supports upgrading directly from ...") and the Upgrade Guide's "Compatibility
  Window": two prior major releases, three from 24.11 on (releases became 6-monthly
  with 24.05). "Upgrades from incompatible versions will fail immediately upon startup";
  they go in steps through releases compatible with the running one.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from datetime import date, datetime, timezone

from clustergen.catalog.slurm_keys import release_name
from clustergen.catalog.versions import VersionTuple

__all__ = ["RELEASES", "SlurmRelease", "release_name", "today", "upgrade_steps"]

MONTHS = (
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
)


@dataclass(frozen=True)
class SlurmRelease:
    version: VersionTuple  # (24, 11)
    released: date
    end_of_support: tuple[int, int]  # (year, month) SchedMD's support ends in
    upgrades_from: tuple[VersionTuple, ...]  # newest first


RELEASES: tuple[SlurmRelease, ...] = (
    SlurmRelease((22, 5), date(2022, 5, 26), (2023, 11), ((21, 8), (20, 11))),
    SlurmRelease((23, 2), date(2023, 2, 28), (2024, 11), ((22, 5), (21, 8))),
    SlurmRelease((23, 11), date(2023, 11, 21), (2025, 5), ((23, 2), (22, 5))),
    SlurmRelease((24, 5), date(2024, 5, 30), (2025, 11), ((23, 11), (23, 2))),
    SlurmRelease((24, 11), date(2024, 11, 29), (2026, 5), ((24, 5), (23, 11), (23, 2))),
    SlurmRelease((25, 5), date(2025, 5, 29), (2026, 11), ((24, 11), (24, 5), (23, 11))),
    SlurmRelease((25, 11), date(2025, 11, 6), (2027, 5), ((25, 5), (24, 11), (24, 5))),
    SlurmRelease((26, 5), date(2026, 5, 26), (2027, 11), ((25, 11), (25, 5), (24, 11))),
)
BY_VERSION: dict[VersionTuple, SlurmRelease] = {r.version: r for r in RELEASES}
# From 24.11 on a release converts state from the three releases before it, and
# releases come every six months (May and November).
UPGRADE_WINDOW = 3


def month_name(year_month: tuple[int, int]) -> str:
    return f"{MONTHS[year_month[1] - 1]} {year_month[0]}"


def today() -> date:
    """The date end of support is judged on: SOURCE_DATE_EPOCH (reproducible-builds.org)
    when set, so a check run twice says the same; otherwise today's date in UTC."""
    epoch = os.environ.get("SOURCE_DATE_EPOCH", "").strip()
    if epoch.isdigit():
        return datetime.fromtimestamp(int(epoch), timezone.utc).date()
    return datetime.now(timezone.utc).date()


def _after(version: VersionTuple) -> VersionTuple:
    """The release after a 6-monthly one: 26.05 -> 26.11 -> 27.05."""
    year, month = version[0], version[1]
    return (year, 11) if month < 11 else (year + 1, 5)


def _releases_up_to(newest: VersionTuple) -> list[VersionTuple]:
    """The known releases, then the 6-monthly ones that follow, up to `newest`."""
    versions = [r.version for r in RELEASES if r.version <= newest]
    while versions and versions[-1] < newest:
        versions.append(_after(versions[-1]))
    return [v for v in versions if v <= newest]


def upgrades_from(version: VersionTuple) -> tuple[VersionTuple, ...]:
    """The releases `version` converts state from; past the table, the three before it."""
    known = BY_VERSION.get(version)
    if known is not None:
        return known.upgrades_from
    earlier = [v for v in _releases_up_to(version) if v < version]
    return tuple(reversed(earlier[-UPGRADE_WINDOW:]))


def upgrade_steps(old: VersionTuple, new: VersionTuple) -> list[VersionTuple] | None:
    """The releases to go through from `old` to `new` (new last): [new] when one step
    will do, None when no known release converts `old` or `new` is not newer."""
    if new <= old:
        return None
    candidates = _releases_up_to(new)
    steps: list[VersionTuple] = []
    current = old
    while current not in upgrades_from(new):
        # The newest release before `new` that converts the running one.
        able = [v for v in candidates if current < v < new and current in upgrades_from(v)]
        if not able:
            return None
        current = able[-1]
        steps.append(current)
    return [*steps, new]
