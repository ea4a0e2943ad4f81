# Shared by the stand-ins of scontrol and sinfo that tests/test_slurm_reboot.py puts
# first on PATH: a clock that ticks at every call, node states in $SIM/<node>, and a
# rebooted node that returns in $SIM/<node>.final (default IDLE) three ticks later.
tick=$(($(cat "$SIM/tick" 2>/dev/null || echo 0) + 1))
echo "$tick" >"$SIM/tick"
for back in "$SIM"/*.back; do
    [ -e "$back" ] || continue
    if [ "$tick" -ge "$(cat "$back")" ]; then
        node=$(basename "$back" .back)
        cat "$SIM/$node.final" 2>/dev/null >"$SIM/$node" || echo IDLE >"$SIM/$node"
        [ -s "$SIM/$node" ] || echo IDLE >"$SIM/$node"
        rm "$back"
    fi
done
# Partitions: lines "partition node node ..." in $SIM/partitions.
partitions_of() { awk -v n="$1" '{for (i = 2; i <= NF; i++) if ($i == n) print $1}' "$SIM/partitions"; }
nodes_of() { awk -v p="$1" '$1 == p {for (i = 2; i <= NF; i++) print $i}' "$SIM/partitions"; }
is_out() { grep -Eq 'DRAIN|REBOOT|DOWN' "$SIM/$1"; }
