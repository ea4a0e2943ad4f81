#!/bin/bash
# GPU health check for cluster ml-training, run by slurmd as the Epilog
# Rendered by clustergen from the spec of cluster ml-training. Do not edit this
# file: change the spec and run `clustergen render` again; every render replaces it.
#
# After every job, on a GPU node: the node shows its profile's GPU count; no GPU
# has a pending or failed row remap or uncorrectable (aggregate) ECC errors; the
# kernel logged no Xid 48, 79, 94 or 95 since the job started; on NVSwitch nodes
# the fabric manager runs. A node that fails is drained with the reasons (never
# set DOWN), so an admin sees why in `sinfo -R`. Temperature is only logged: right
# after a job a GPU is at its hottest, so draining on it would be a false alarm.
#
# Every command runs under `timeout`: a GPU that fell off the bus can hang
# nvidia-smi, and the node would stay COMPLETING. The script always exits 0: a
# failing Epilog drains the node without saying why.
set -uo pipefail

readonly SMI_TIMEOUT_S=30
readonly CALL_TIMEOUT_S=10
readonly KILL_AFTER_S=5
readonly MAX_GPU_TEMP_C=85
# When the job's start time is not in the environment, Xids are searched since the
# previous run of this Epilog.
readonly STAMP=/run/clustergen-epilog.last

smi() { timeout --kill-after="${KILL_AFTER_S}" "${SMI_TIMEOUT_S}" nvidia-smi "$@"; }
call() { timeout --kill-after="${KILL_AFTER_S}" "${CALL_TIMEOUT_S}" "$@"; }

node="${SLURMD_NODENAME:-$(call hostname -s)}"

# "<GPU count> <1 if NVSwitch>" for this node; "0 0" for a node without GPUs.
node_profile() {
    local name=$1
    if in_range "${name}" gpu 2 1 8; then echo "8 1"; return; fi
    echo "0 0"
}

# in_range NAME PREFIX WIDTH LOW HIGH: NAME is PREFIX and a WIDTH-digit number
# from LOW to HIGH (gpu07 is in gpu[01-08]).
in_range() {
    local number=${1#"$2"}
    [[ "$1" == "$2"* && ${#number} -eq $3 && "${number}" =~ ^[0-9]+$ ]] || return 1
    (( 10#${number} >= $4 && 10#${number} <= $5 ))
}

timed_out() { (( $1 == 124 || $1 == 137 )); }
is_number() { [[ "$1" =~ ^[0-9]+$ ]]; }
is_yes() { [[ "${1,,}" == "yes" || "$1" == "1" ]]; }

problems=()

check_gpus() {
    local expected=$1 readings status index ecc temperature found=0 hot=()
    readings=$(smi --query-gpu=index,ecc.errors.uncorrected.aggregate.total,temperature.gpu \
        --format=csv,noheader,nounits 2>&1)
    status=$?
    if timed_out "${status}"; then
        problems+=("nvidia-smi did not answer within ${SMI_TIMEOUT_S}s")
        return 1
    elif (( status != 0 )); then
        problems+=("nvidia-smi failed: ${readings//$'\n'/ }")
        return 1
    fi
    while IFS=', ' read -r index ecc temperature; do
        [[ -n "${index}" ]] || continue
        found=$((found + 1))
        # "[N/A]" where a GPU does not report a value; only numbers are judged.
        if is_number "${ecc}" && (( ecc > 0 )); then
            problems+=("GPU ${index} has ${ecc} uncorrectable ECC errors")
        fi
        if is_number "${temperature}" && (( temperature > MAX_GPU_TEMP_C )); then
            hot+=("GPU ${index} at ${temperature}C")
        fi
    done <<< "${readings}"
    if (( found != expected )); then
        problems+=("found ${found} GPUs, expected ${expected}")
    fi
    if (( ${#hot[@]} > 0 )); then
        call logger -t clustergen-epilog \
            "${node}: above ${MAX_GPU_TEMP_C}C at job end (not drained): ${hot[*]}" || true
    fi
}

check_row_remaps() {
    local readings status bus pending failure
    readings=$(smi --query-remapped-rows=gpu_bus_id,remapped_rows.pending,remapped_rows.failure \
        --format=csv,noheader 2>&1)
    status=$?
    if timed_out "${status}"; then
        problems+=("nvidia-smi row remap query did not answer within ${SMI_TIMEOUT_S}s")
        return
    elif (( status != 0 )); then
        # GPUs before Ampere have no row remapping; nvidia-smi says so and fails.
        [[ "${readings,,}" == *"not supported"* ]] ||
            problems+=("nvidia-smi row remap query failed: ${readings//$'\n'/ }")
        return
    fi
    while IFS=', ' read -r bus pending failure; do
        [[ -n "${bus}" ]] || continue
        if is_yes "${pending}"; then
            problems+=("GPU ${bus} has a pending row remap (needs a GPU reset)")
        fi
        if is_yes "${failure}"; then
            problems+=("GPU ${bus} has a failed row remap")
        fi
    done <<< "${readings}"
}

check_xids() {
    local since="${SLURM_JOB_START_TIME:-}" log status line
    if [[ -z "${since}" && -r "${STAMP}" ]]; then
        read -r since < "${STAMP}" || since=""
    fi
    if [[ -n "${since}" ]]; then
        log=$(call journalctl -k -q -o cat --no-pager --since "@${since}" 2>&1)
    else
        log=$(call journalctl -k -q -o cat --no-pager -b 2>&1)
    fi
    status=$?
    if (( status != 0 )); then
        call logger -t clustergen-epilog "${node}: could not read the kernel log (${status})" ||
            true
        return
    fi
    # Xid 48: double-bit ECC error; 79: fell off the bus; 94/95: contained and
    # uncontained ECC errors.
    while IFS= read -r line; do
        if [[ "${line}" =~ NVRM:\ Xid\ \(([^\)]*)\):\ (48|79|94|95), ]]; then
            problems+=("Xid ${BASH_REMATCH[2]} on ${BASH_REMATCH[1]}")
        fi
    done <<< "${log}"
}

check_fabric_manager() {
    if ! call systemctl is-active --quiet nvidia-fabricmanager; then
        problems+=("nvidia-fabricmanager is not active")
    fi
}

read -r expected nvswitch <<< "$(node_profile "${node}")"
if (( expected == 0 )); then
    exit 0
fi

now=$(printf '%(%s)T' -1)
if check_gpus "${expected}"; then
    check_row_remaps
fi
check_xids
if (( nvswitch == 1 )); then
    check_fabric_manager
fi
printf '%s\n' "${now}" > "${STAMP}" 2>/dev/null || true

if (( ${#problems[@]} > 0 )); then
    reason="clustergen health: $(IFS=';'; echo "${problems[*]}")"
    reason=${reason//;/; }
    call logger -t clustergen-epilog "draining ${node}: ${reason}" || true
    call scontrol update NodeName="${node}" State=DRAIN Reason="${reason}" || true
fi
exit 0
