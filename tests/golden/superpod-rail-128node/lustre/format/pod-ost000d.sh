#!/bin/bash
# Format Lustre target pod-OST000d of file system pod
# Rendered by clustergen from the spec of cluster superpod. Do not edit this
# file: change the spec and run `clustergen render` again; every render replaces it.
#
# A dry run unless told otherwise: without --yes it checks the device and prints
# the commands it would run, changing nothing.
#
#   /usr/local/sbin/lustre-format-pod-ost000d                      dry run
#   /usr/local/sbin/lustre-format-pod-ost000d --yes                format, only if the device is blank
#   /usr/local/sbin/lustre-format-pod-ost000d --yes --reformat-existing
#       DESTROYS what the device holds: another file system, another Lustre
#       target, or pod-OST000d itself. Never needed for a first format.
#
# For Ansible (never destructive): --primary-only skips quietly on a failover
# node or another server; --skip-formatted skips quietly where pod-OST000d is already formatted.
#
# With --yes it first checks that it runs on a service node of the target, that
# the device exists, is a block device and carries no file system or label
# (blkid, wipefs -n).
set -euo pipefail

readonly TARGET='pod-OST000d'
readonly DEVICE='/dev/disk/by-id/dm-name-ost000d'
readonly SERVICE_NODES=('oss04' 'oss03')
MKFS=('mkfs.lustre' '--fsname=pod' '--ost' '--index=13' '--mgsnode=10.200.0.5@o2ib0' '--mgsnode=10.200.0.6@o2ib0' '--servicenode=10.200.0.14@o2ib0' '--servicenode=10.200.0.13@o2ib0' '--backfstype=ldiskfs')

confirm=false
reformat=false
primary_only=false
skip_formatted=false
for arg in "$@"; do
    case "$arg" in
        --yes) confirm=true ;;
        --reformat-existing) reformat=true ;;
        --primary-only) primary_only=true ;;
        --skip-formatted) skip_formatted=true ;;
        *)
            echo "usage: $0 [--yes [--reformat-existing]] [--primary-only] [--skip-formatted]" >&2
            exit 2
            ;;
    esac
done
if "$reformat" && ! "$confirm"; then
    echo "$TARGET: --reformat-existing needs --yes as well" >&2
    exit 2
fi
if "$reformat" && "$skip_formatted"; then
    echo "$TARGET: --reformat-existing and --skip-formatted contradict each other" >&2
    exit 2
fi

say() { printf '%s: %s\n' "$TARGET" "$*"; }
refuse() {
    say "REFUSED: $*" >&2
    exit 1
}
run() {
    if "$confirm"; then
        say "running: $*"
        "$@"
    else
        say "dry run, would run: $*"
    fi
}

skip_if_formatted() {
    if "$skip_formatted"; then
        say "already formatted; skipped"
        exit 0
    fi
}

# Refuse unless the device is a block device without any signature; with
# --reformat-existing, say loudly what is destroyed.
check_blank() {
    local disk=$1 info label kind signatures
    [[ -e $disk ]] || refuse "$disk does not exist"
    [[ -b $disk ]] || refuse "$disk is not a block device"
    info=$(blkid -p -o export -- "$disk") || info=""
    label=$(sed -n 's/^LABEL=//p' <<<"$info")
    kind=$(sed -n 's/^TYPE=//p' <<<"$info")
    signatures=$(wipefs -n -- "$disk")
    if [[ $label == "$TARGET" ]]; then
        skip_if_formatted
        "$reformat" || refuse "$disk already holds $TARGET; formatting it again destroys this target (--reformat-existing)"
        say "WARNING: destroying $TARGET on $disk"
    elif [[ -n $info || -n $signatures ]]; then
        "$reformat" || refuse "$disk carries ${kind:-a signature}${label:+ labelled $label}; not blank (--reformat-existing destroys it)"
        say "WARNING: destroying ${kind:-a signature}${label:+ labelled $label} on $disk"
    fi
}

full=$(hostname)
host=${full%%.*}
serves=false
for node in "${SERVICE_NODES[@]}"; do
    # The spec may name a node by its full host name or by its short one.
    if [[ $node == "$host" || $node == "$full" ]]; then
        serves=true
        host=$node
    fi
done
if "$primary_only" && [[ $host != "${SERVICE_NODES[0]}" ]]; then
    say "$host is not the primary service node ${SERVICE_NODES[0]}; skipped"
    exit 0
fi
"$serves" || refuse "$host is not a service node of $TARGET (${SERVICE_NODES[*]})"

check_blank "$DEVICE"

if "$reformat"; then
    MKFS+=(--reformat)
fi
run "${MKFS[@]}" "$DEVICE"
say "$("$confirm" && echo formatted || echo "dry run done; nothing changed")"
