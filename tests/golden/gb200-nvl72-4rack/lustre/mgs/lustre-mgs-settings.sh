#!/bin/bash
# Persistent settings and OST pools of Lustre file system nvl, run on the MGS
# Rendered by clustergen from the spec of cluster nvl72. Do not edit this
# file: change the spec and run `clustergen render` again; every render replaces it.
#
# lctl set_param -P records each setting in the MGS configuration log, which
# every client and server replays at mount, so it survives reboots. Each run
# adds a record, so a setting is applied only when it differs from the value
# this script last applied (kept in STATE). Pools are created and filled only
# where they differ. Says what it changed.
set -euo pipefail

readonly FSNAME='nvl'
readonly STATE=/var/lib/clustergen/lustre-set-param
PARAMS=()

mkdir -p "$(dirname "$STATE")"
touch "$STATE"
changed=0
for param in "${PARAMS[@]}"; do
    if ! grep -qxF -- "$param" "$STATE"; then
        lctl set_param -P "$param"
        key=${param%%=*}
        grep -v -- "^${key//./\\.}=" "$STATE" >"$STATE.new" || true
        echo "$param" >>"$STATE.new"
        mv "$STATE.new" "$STATE"
        echo "set_param -P $param"
        changed=$((changed + 1))
    fi
done

ensure_pool() {
    local pool=$1 ost members
    shift
    if ! lctl pool_list "$FSNAME" | grep -qxF -- "$FSNAME.$pool"; then
        lctl pool_new "$FSNAME.$pool"
        echo "created pool $FSNAME.$pool"
        changed=$((changed + 1))
    fi
    members=$(lctl pool_list "$FSNAME.$pool")
    for ost in "$@"; do
        if ! grep -qxF -- "$ost" <<<"$members"; then
            lctl pool_add "$FSNAME.$pool" "${ost%_UUID}"
            echo "added ${ost%_UUID} to pool $FSNAME.$pool"
            changed=$((changed + 1))
        fi
    done
}

echo "$FSNAME: $changed change(s)"
