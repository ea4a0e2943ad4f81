#!/bin/bash
# GPU health check for cluster vr, run by slurmd as the Epilog
# Rendered by clustergen from the spec of cluster vr. Do not edit this
# file: change the spec and run `clustergen render` again; every render replaces it.
#
# After every job, on a GPU node: the node shows its profile's GPU count; no GPU
# has uncorrectable ECC errors since the driver loaded (volatile counter) or a
# pending or failed row remap; the kernel logged none of the Xids below since the
# previous check; each compute HCA port is ACTIVE at the fabric's link rate; where
# the profile runs the fabric manager, it is active; on the trays of NVLink domains every
# GPU is in the NVLink fabric and, where IMEX runs from boot, nvidia-imex is active.
# A node that fails is drained with the reasons (never set DOWN), so an admin sees
# why in `sinfo -R`.
# Temperature is only logged: right after a job a GPU is at its hottest, so
# draining on it would be a false alarm.
#
# Every command runs under `timeout`: a GPU that fell off the bus can hang
# nvidia-smi, and the node would stay COMPLETING. The script always exits 0: a
# failing Epilog drains the node without saying why.
set -uo pipefail

readonly SMI_TIMEOUT_S=20
readonly CALL_TIMEOUT_S=10
readonly KILL_AFTER_S=5
readonly MAX_GPU_TEMP_C=85
# journalctl keeps its place in the kernel log here (--cursor-file), so each check
# reads only what was logged since the previous one, and an Xid drains once. /run
# is emptied at boot: the first check after a boot reads that boot's kernel log.
readonly CURSOR=/run/clustergen-epilog.cursor
# The fabric's link rate in Gb/s, and where the kernel shows each HCA port.
readonly LINK_GBITS=800
readonly SYSFS_IB=/sys/class/infiniband

# This node's hardware profile, from its name; nothing for a node without GPUs.
node_profile() {
    local name=$1
    if in_range "${name}" vr 3 1 36; then echo vr-tray; return; fi
}

# What a node of the profile must show: its GPU count, whether it runs the fabric
# manager, whether its GPUs join an NVLink domain's fabric and whether IMEX runs from
# boot, and its compute HCA ports (HCA:port).
gpus=0
fabric_manager=0
nvlink_fabric=0
imex=0
rails=()
use_profile() {
    case "$1" in
        vr-tray) gpus=4; fabric_manager=0; nvlink_fabric=1; imex=1; rails=(mlx5_0:1 mlx5_1:1 mlx5_2:1 mlx5_3:1 mlx5_4:1 mlx5_5:1 mlx5_6:1 mlx5_7:1) ;;
    esac
}

# in_range NAME PREFIX WIDTH LOW HIGH: NAME is PREFIX and a WIDTH-digit number
# from LOW to HIGH (gpu07 is in gpu[01-08]).
in_range() {
    local number=${1#"$2"}
    [[ "$1" == "$2"* && ${#number} -eq $3 && "${number}" =~ ^[0-9]+$ ]] || return 1
    (( 10#${number} >= $4 && 10#${number} <= $5 ))
}

problems=()

smi() { timeout --kill-after="${KILL_AFTER_S}" "${SMI_TIMEOUT_S}" nvidia-smi "$@"; }
call() { timeout --kill-after="${KILL_AFTER_S}" "${CALL_TIMEOUT_S}" "$@"; }
timed_out() { (( $1 == 124 || $1 == 137 )); }
is_number() { [[ "$1" =~ ^[0-9]+$ ]]; }
is_yes() { [[ "${1,,}" == "yes" || "$1" == "1" ]]; }

# Xid: what the drain reason says (NVIDIA's Xid catalog, docs.nvidia.com/deploy/xid-errors).
xid_reason() {
    case "$1" in
        48) echo "double-bit ECC error" ;;
        63) echo "row remap recorded, reset the GPU to apply it" ;;
        64) echo "row remap or page retirement failed" ;;
        74) echo "NVLink error" ;;
        79) echo "GPU has fallen off the bus" ;;
        94) echo "contained uncorrectable ECC error, reset the GPU" ;;
        95) echo "uncontained uncorrectable ECC error" ;;
        119) echo "GSP RPC timeout" ;;
        144) echo "NVLink fault" ;;
        145) echo "NVLink fault" ;;
        146) echo "NVLink fault" ;;
        147) echo "NVLink fault" ;;
        148) echo "NVLink fault" ;;
        149) echo "NVLink link down" ;;
        150) echo "NVLink fault" ;;
        154) echo "GPU recovery action required" ;;
    esac
}
# Xid: whether its line reports the fault cleared (Xid 154 back to None).
xid_cleared() {
    case "$1" in
        154) [[ "$2" == *"to 0x0 (None)"* ]] ;;
        *) return 1 ;;
    esac
}
readonly XID_PATTERN='NVRM: Xid \(([^)]*)\): (48|63|64|74|79|94|95|119|144|145|146|147|148|149|150|154),'

# One nvidia-smi call. The ECC count is the volatile one: the aggregate counter
# keeps an error for the life of the GPU, also after a row remap repaired it.
# GPUs without row remapping (before Ampere) and values a GPU does not report
# read "[N/A]"; only numbers and Yes are judged.
check_gpus() {
    local readings status index ecc pending failure temperature found=0 hot=()
    readings=$(smi --query-gpu=index,ecc.errors.uncorrected.volatile.total,remapped_rows.pending,remapped_rows.failure,temperature.gpu \
        --format=csv,noheader,nounits 2>&1)
    status=$?
    if timed_out "${status}"; then
        problems+=("nvidia-smi did not answer within ${SMI_TIMEOUT_S}s")
        return
    elif (( status != 0 )); then
        problems+=("nvidia-smi failed: ${readings//$'\n'/ }")
        return
    fi
    while IFS=', ' read -r index ecc pending failure temperature; do
        [[ -n "${index}" ]] || continue
        found=$((found + 1))
        if is_number "${ecc}" && (( ecc > 0 )); then
            problems+=("GPU ${index} has ${ecc} uncorrectable ECC errors since the driver loaded")
        fi
        if is_yes "${pending}"; then
            problems+=("GPU ${index} has a pending row remap (needs a GPU reset)")
        fi
        if is_yes "${failure}"; then
            problems+=("GPU ${index} has a failed row remap")
        fi
        if is_number "${temperature}" && (( temperature > MAX_GPU_TEMP_C )); then
            hot+=("GPU ${index} at ${temperature}C")
        fi
    done <<< "${readings}"
    if (( found != gpus )); then
        problems+=("found ${found} GPUs, expected ${gpus}")
    fi
    if (( ${#hot[@]} > 0 )); then
        call logger -t clustergen-epilog \
            "${node}: above ${MAX_GPU_TEMP_C}C at job end (not drained): ${hot[*]}" || true
    fi
}

# Every GPU registered with the NVLink fabric of its domain (`nvidia-smi -q`, each GPU's
# "Fabric" section: State Completed, Status Success; NVML's nvmlGpuFabricInfo_t: the
# status counts once the state is complete). A GPU that left the fabric, or never
# joined it, fails multi-node NVLink jobs while its local checks pass. A GPU that
# reports no registration (N/A) is not judged.
check_nvlink_fabric() {
    local report status line gpu="" section=0 key order=()
    local -A state=() result=()
    report=$(smi -q 2>&1)
    status=$?
    if timed_out "${status}"; then
        problems+=("nvidia-smi -q did not answer within ${SMI_TIMEOUT_S}s")
        return
    elif (( status != 0 )); then
        problems+=("nvidia-smi -q failed: ${report//$'\n'/ }")
        return
    fi
    while IFS= read -r line; do
        if [[ "${line}" =~ ^GPU\ ([0-9A-Fa-f:.]+)$ ]]; then
            gpu=${BASH_REMATCH[1]}
            order+=("${gpu}")
            section=0
        elif [[ "${line}" =~ ^\ {4}[^\ ] ]]; then
            [[ "${line}" =~ ^\ {4}Fabric\ *$ ]] && section=1 || section=0
        elif (( section )) && [[ "${line}" =~ ^\ {8}(State|Status)\ *:\ *(.*)$ ]]; then
            key=${BASH_REMATCH[1]}
            if [[ "${key}" == State ]]; then
                state[${gpu}]=${BASH_REMATCH[2]}
            else
                result[${gpu}]=${BASH_REMATCH[2]}
            fi
        fi
    done <<< "${report}"
    for gpu in "${order[@]}"; do
        case "${state[${gpu}]:-N/A}" in
            N/A) ;;
            Completed)
                if [[ "${result[${gpu}]:-}" != Success ]]; then
                    problems+=("GPU ${gpu} failed to join the NVLink fabric (${result[${gpu}]:-no status})")
                fi
                ;;
            *) problems+=("GPU ${gpu} is not in the NVLink fabric (state ${state[${gpu}]})") ;;
        esac
    done
}

# The IMEX daemon, where it runs from boot (slurm.imex switch or global): without it
# no multi-node NVLink memory is shared and the domain's jobs fail.
check_imex() {
    if ! call systemctl is-active --quiet nvidia-imex; then
        problems+=("nvidia-imex is not active")
    fi
}

check_xids() {
    local log status line listed=" " key order=()
    local -A found=()
    log=$(call journalctl -k -q -o cat --no-pager --cursor-file="${CURSOR}" 2>&1)
    status=$?
    if (( status != 0 )); then
        call logger -t clustergen-epilog \
            "${node}: could not read the kernel log (${status}): ${log//$'\n'/ }" || true
        # A cursor journalctl cannot seek to (a damaged file) would fail every check
        # from now on: the next check starts over from the boot.
        if ! timed_out "${status}"; then
            call rm -f -- "${CURSOR}" || true
        fi
        return
    fi
    # One reason per Xid and GPU, in the order they came; a line that reports the fault
    # cleared (Xid 154 back to None) takes back that GPU's earlier one.
    while IFS= read -r line; do
        [[ "${line}" =~ ${XID_PATTERN} ]] || continue
        key="${BASH_REMATCH[2]}@${BASH_REMATCH[1]}"
        if xid_cleared "${BASH_REMATCH[2]}" "${line}"; then
            unset 'found[${key}]'
            continue
        fi
        [[ -v found[${key}] ]] && continue
        found[${key}]="Xid ${BASH_REMATCH[2]} on ${BASH_REMATCH[1]}: $(xid_reason "${BASH_REMATCH[2]}")"
        [[ "${listed}" == *" ${key} "* ]] || { listed+="${key} "; order+=("${key}"); }
    done <<< "${log}"
    for key in "${order[@]}"; do
        [[ -v found[${key}] ]] && problems+=("${found[${key}]}")
    done
}

node="${SLURMD_NODENAME:-$(call hostname -s)}"

# Each compute HCA port: state ACTIVE, rate the fabric's link rate. One grep reads
# every file (a port whose driver hangs cannot stall the Epilog) and prints
# FILE:VALUE lines; InfiniBand and RoCE ports show the same files.
check_fabric_ports() {
    local rail hca port dir files=() readings status line state rate shown
    local -A value=()
    for rail in "${rails[@]}"; do
        dir="${SYSFS_IB}/${rail%:*}/ports/${rail##*:}"
        files+=("${dir}/state" "${dir}/rate")
    done
    readings=$(call grep -H '' "${files[@]}" 2>/dev/null)
    status=$?
    if timed_out "${status}"; then
        problems+=("the HCA ports did not answer within ${CALL_TIMEOUT_S}s")
        return
    fi
    while IFS= read -r line; do
        case "${line}" in
            */state:*) value["${line%%/state:*}/state"]=${line#*/state:} ;;
            */rate:*) value["${line%%/rate:*}/rate"]=${line#*/rate:} ;;
        esac
    done <<< "${readings}"
    for rail in "${rails[@]}"; do
        hca=${rail%:*}
        port=${rail##*:}
        dir="${SYSFS_IB}/${hca}/ports/${port}"
        state=${value["${dir}/state"]:-}
        rate=${value["${dir}/rate"]:-}
        if [[ -z "${state}" ]]; then
            problems+=("${hca} port ${port} not found")
        elif [[ "${state#*: }" != "ACTIVE" ]]; then
            problems+=("${hca} port ${port} is ${state#*: }")
        elif [[ "${rate%% *}" != "${LINK_GBITS}" ]]; then
            shown=${rate%% (*}
            problems+=("${hca} port ${port} at ${shown:-an unknown rate}, expected ${LINK_GBITS} Gb/sec")
        fi
    done
}

check_fabric_manager() {
    if ! call systemctl is-active --quiet nvidia-fabricmanager; then
        problems+=("nvidia-fabricmanager is not active")
    fi
}

profile=$(node_profile "${node}")
if [[ -z "${profile}" ]]; then
    exit 0
fi
use_profile "${profile}"

check_gpus
check_xids
if (( ${#rails[@]} > 0 )); then
    check_fabric_ports
fi
if (( fabric_manager == 1 )); then
    check_fabric_manager
fi
if (( nvlink_fabric == 1 )); then
    check_nvlink_fabric
fi
if (( imex == 1 )); then
    check_imex
fi

if (( ${#problems[@]} > 0 )); then
    reason="clustergen health: $(IFS=';'; echo "${problems[*]}")"
    reason=${reason//;/; }
    call logger -t clustergen-epilog "draining ${node}: ${reason}" || true
    call scontrol update NodeName="${node}" State=DRAIN Reason="${reason}" || true
fi
exit 0
