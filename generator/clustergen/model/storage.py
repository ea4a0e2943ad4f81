"""storage: the Lustre file system as configuration."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from clustergen.model.common import Hostname, Int, Size, StrictModel
from clustergen.model.syntax import AbsolutePath, BlockDevice, LnetNetwork, LustreFsname


class LustreMgs(StrictModel):
    """The Lustre management target."""

    node: Hostname = Field(description="Node that runs the MGS.")
    device: BlockDevice = Field(
        description="Block device (/dev/disk/by-id/... preferred) or zfs pool/dataset.",
    )


class LustreTarget(StrictModel):
    """A Lustre MDT or OST."""

    index: Int = Field(ge=0, le=65535, description="Target index, unique per MDT and per OST.")
    node: Hostname = Field(description="Server node of the target.")
    device: BlockDevice = Field(
        description="Block device (/dev/disk/by-id/... preferred) or zfs pool/dataset.",
    )


class LustreMount(StrictModel):
    """How clients mount the file system."""

    path: AbsolutePath = Field(description="Client mount point.")
    clients: list[str] = Field(min_length=1, description="Roles whose nodes mount the file system.")


class LayoutComponent(StrictModel):
    """One component of a progressive file layout."""

    end: Size | Literal["eof"] = Field(description="End of the component (e.g. 64MiB) or eof.")
    stripe_count: Int = Field(ge=-1, le=2000, description="Stripe count; -1 = all OSTs.")
    stripe_size: Size | None = Field(default=None, description="Stripe size, multiple of 64KiB.")


class LustreLayout(StrictModel):
    """Default striping of one directory."""

    path: AbsolutePath = Field(description="Directory under the mount point.")
    stripe_count: Int | None = Field(default=None, ge=-1, le=2000, description="lfs setstripe -c.")
    stripe_size: Size | None = Field(default=None, description="lfs setstripe -S.")
    components: list[LayoutComponent] | None = Field(
        default=None, description="Progressive file layout components, ascending ends."
    )


class Lustre(StrictModel):
    """A Lustre file system: targets, NIDs, client mounts, striping and tuning."""

    fsname: LustreFsname = Field(description="File system name, 1-8 of [A-Za-z0-9_-].")
    lnet: LnetNetwork = Field(
        default="tcp0",
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
