"""storage: the Lustre file system as configuration."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from clustergen.model.common import (
    ABSOLUTE_PATH,
    BLOCK_DEVICE,
    LNET_NETWORK,
    LUSTRE_FSNAME,
    Hostname,
    Size,
    StrictModel,
)


class LustreMgs(StrictModel):
    """The Lustre management target."""

    node: Hostname = Field(description="Node that runs the MGS.")
    device: str = Field(
        pattern=BLOCK_DEVICE,
        description="Block device (/dev/disk/by-id/... preferred) or zfs pool/dataset.",
    )


class LustreTarget(StrictModel):
    """A Lustre MDT or OST."""

    index: int = Field(ge=0, le=65535, description="Target index, unique per MDT and per OST.")
    node: Hostname = Field(description="Server node of the target.")
    device: str = Field(
        pattern=BLOCK_DEVICE,
        description="Block device (/dev/disk/by-id/... preferred) or zfs pool/dataset.",
    )


class LustreMount(StrictModel):
    """How clients mount the file system."""

    path: str = Field(pattern=ABSOLUTE_PATH, description="Client mount point.")
    clients: list[str] = Field(min_length=1, description="Roles whose nodes mount the file system.")


class LayoutComponent(StrictModel):
    """One component of a progressive file layout."""

    end: Size | Literal["eof"] = Field(description="End of the component (e.g. 64MiB) or eof.")
    stripe_count: int = Field(ge=-1, le=2000, description="Stripe count; -1 = all OSTs.")
    stripe_size: Size | None = Field(default=None, description="Stripe size, multiple of 64KiB.")


class LustreLayout(StrictModel):
    """Default striping of one directory."""

    path: str = Field(pattern=ABSOLUTE_PATH, description="Directory under the mount point.")
    stripe_count: int | None = Field(default=None, ge=-1, le=2000, description="lfs setstripe -c.")
    stripe_size: Size | None = Field(default=None, description="lfs setstripe -S.")
    components: list[LayoutComponent] | None = Field(
        default=None, description="Progressive file layout components, ascending ends."
    )


class Lustre(StrictModel):
    """A Lustre file system: targets, NIDs, client mounts, striping and tuning."""

    fsname: str = Field(
        pattern=LUSTRE_FSNAME, description="File system name, 1-8 of [A-Za-z0-9_-]."
    )
    lnet: str = Field(
        default="tcp0",
        pattern=LNET_NETWORK,
        description="LNet network of the servers' NIDs (fabric_ip@lnet), e.g. o2ib0.",
    )
    backend: Literal["ldiskfs", "zfs"] = Field(
        default="ldiskfs", description="Backing file system."
    )
    mgs: LustreMgs = Field(description="Management server target.")
    mdts: list[LustreTarget] = Field(min_length=1, description="Metadata targets.")
    osts: list[LustreTarget] = Field(min_length=1, description="Object storage targets.")
    mount: LustreMount = Field(description="Where and on which roles clients mount it.")
    layouts: list[LustreLayout] = Field(
        default_factory=list, description="Default striping per directory."
    )
    client_tuning: dict[str, int | str] = Field(
        default_factory=dict, description="lctl set_param values applied on clients."
    )


class Storage(StrictModel):
    """Shared storage."""

    lustre: Lustre | None = Field(default=None, description="A Lustre file system.")
