#!/bin/bash
# Directory layouts of Lustre file system nvl, run once from one client
# Rendered by clustergen from the spec of cluster nvl72. Do not edit this
# file: change the spec and run `clustergen render` again; every render replaces it.
#
# For each directory: create it if missing, read its default layout with
# `lfs getstripe -d -y` and run `lfs setstripe` only where it differs; then owner,
# group and mode, only where they differ. Says what it changed; a second run
# changes nothing. Fields the spec leaves out (*) keep the file system default.
#
# Users can write below the mount, and this runs as root: it follows no link there.
# Each directory is entered one level at a time from the mount (mkdir for a missing
# level, never -p); a level that is a symbolic link, not a directory, '.', '..' or
# empty, or that the kernel places elsewhere (pwd -P), is refused with its reason,
# and nothing is changed for that entry. Every change is made on `.`, the directory
# entered and checked, never through its path again. A refusal fails the run (exit
# 1) after the other entries are done. docs/security.md says what this closes.
set -euo pipefail
unset CDPATH

readonly MOUNT='/mnt/lustre'
changed=0
refused=0

# The mount point as the kernel resolves it: links above it are root's own.
if ! ROOT=$(cd -P -- "$MOUNT" && pwd -P); then
    echo "REFUSED: the mount point $MOUNT is not a directory" >&2
    exit 1
fi
readonly ROOT

refuse() {
    echo "REFUSED $1: $2; nothing changed for it" >&2
    refused=$((refused + 1))
}

# Enter DIR (cd), creating missing levels, without following a link below the mount.
enter() {
    local dir=$1 rel part here=$ROOT shown=${MOUNT%/}
    local -a parts=()
    rel=${dir#"${MOUNT%/}"}
    if [[ $rel == "$dir" || ( -n $rel && $rel != /* ) ]]; then
        refuse "$dir" "not under $MOUNT"
        return 1
    fi
    [[ -z ${rel#/} ]] || IFS=/ read -r -a parts <<<"${rel#/}"
    if ! cd -P -- "$ROOT" || [[ $(pwd -P) != "$ROOT" ]]; then
        refuse "$dir" "cannot enter $MOUNT"
        return 1
    fi
    for part in "${parts[@]}"; do
        case $part in
            "" | . | ..)
                refuse "$dir" "a '.', '..' or empty segment"
                return 1
                ;;
        esac
        here=$here/$part
        shown=$shown/$part
        if [[ -L ./$part ]]; then
            refuse "$dir" "$shown is a symbolic link"
            return 1
        fi
        if [[ ! -e ./$part ]]; then
            if ! mkdir -- "./$part"; then
                refuse "$dir" "cannot create $shown"
                return 1
            fi
            echo "created $shown"
            changed=$((changed + 1))
        fi
        if [[ -L ./$part || ! -d ./$part ]]; then
            refuse "$dir" "$shown is not a directory"
            return 1
        fi
        if ! cd -P -- "./$part" || [[ $(pwd -P) != "$here" ]]; then
            refuse "$dir" "$shown leads to $(pwd -P), not $here"
            return 1
        fi
    done
}

# "end count size pattern pool" per component of DIR's default layout.
current_layout() {
    lfs getstripe -d -y "$1" | awk '
        function flush() {
            if (have) print end, count, size, pattern, (pool == "" ? "-" : pool)
            have = 0; end = ""; count = ""; size = ""; pattern = ""; pool = ""
        }
        /component[0-9]+:/ { flush() }
        $1 == "lcme_extent.e_end:" { end = $2; have = 1 }
        $1 == "stripe_count:" { count = $2; have = 1; if (end == "") end = "*" }
        $1 == "stripe_size:" { size = $2 }
        $1 == "pattern:" { pattern = $2 }
        $1 == "pool:" { pool = $2 }
        END { flush() }'
}

# Does the current layout (stdin) match the wanted components (arguments)? A *
# in a wanted field matches anything.
matches() {
    local -a have
    mapfile -t have
    (($# == ${#have[@]})) || return 1
    local i=0 want field
    for want in "$@"; do
        read -r -a w <<<"$want"
        read -r -a h <<<"${have[$i]}"
        for field in 0 1 2 3 4; do
            [[ ${w[$field]} == "*" || ${w[$field]} == "${h[$field]:-}" ]] || return 1
        done
        i=$((i + 1))
    done
}

# Owner, group and mode of the directory entered (.), named DIR in what it says.
ensure_dir() {
    local dir=$1 owner=$2 group=$3 mode=$4
    if [[ -n $owner && $(stat -c %U .) != "$owner" ]]; then
        chown -h -- "$owner" .
        echo "$dir: owner $owner"
        changed=$((changed + 1))
    fi
    if [[ -n $group && $(stat -c %G .) != "$group" ]]; then
        chgrp -h -- "$group" .
        echo "$dir: group $group"
        changed=$((changed + 1))
    fi
    if [[ -n $mode ]] && ((8#$(stat -c %a .) != 8#$mode)); then
        chmod -- "$mode" .
        echo "$dir: mode $mode"
        changed=$((changed + 1))
    fi
}

# The default layout of the directory entered (.).
ensure_layout() {
    local dir=$1 count=$2
    shift 2
    local -a want=("${@:1:count}") args=("${@:count+1}")
    if ! current_layout . | matches "${want[@]}"; then
        lfs setstripe "${args[@]}" .
        echo "$dir: lfs setstripe ${args[*]}"
        changed=$((changed + 1))
    fi
}

# A project ID on the tree of the directory entered (.); `lfs project -d` prints
# "ID P DIR".
ensure_project() {
    local dir=$1 id=$2
    if [[ $(lfs project -d . | awk '{print $1; exit}') != "$id" ]]; then
        lfs project -p "$id" -r -s .
        echo "$dir: project $id"
        changed=$((changed + 1))
    fi
}

# Limits (block soft/hard in KiB, inode soft/hard; 0 = none) of a user (-u),
# group (-g) or project (-p), read with `lfs quota -q`.
ensure_quota() {
    local flag=$1 id=$2 limits="$3 $4 $5 $6" have
    have=$(lfs quota -q "$flag" "$id" "$MOUNT" | awk '{ for (i = 1; i <= NF; i++) f[++n] = $i }
        END { print f[3], f[4], f[7], f[8] }')
    if [[ $have != "$limits" ]]; then
        lfs setquota "$flag" "$id" -b "$3" -B "$4" -i "$5" -I "$6" "$MOUNT"
        echo "quota $flag $id: $limits"
        changed=$((changed + 1))
    fi
}

cd /
echo "nvl layouts: $changed change(s)"
if ((refused > 0)); then
    echo "nvl layouts: $refused path(s) refused (REFUSED above)" >&2
    exit 1
fi
