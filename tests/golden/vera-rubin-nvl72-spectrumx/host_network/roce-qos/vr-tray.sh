#!/bin/sh
# RoCE QoS of the vr-tray nodes: DSCP trust, PFC and ECN on priority 3
# Rendered by clustergen from the spec of cluster vr. Do not edit this
# file: change the spec and run `clustergen render` again; every render replaces it.
# Traffic class 106 (NCCL_IB_TC from network.fabric.type spectrum-x: DSCP 26, Spectrum-X's lossless priority 3): DSCP 26 (the ToS byte's
# upper six bits, RFC 2474), which the NIC puts on priority 3 when it trusts DSCP (mlx5's
# default dscp2prio: DSCP 8p..8p+7 on priority p). NCCL (NCCL_IB_TC), ib_write_bw
# (--tclass) and RDMA CM (cma_roce_tos) send that class; this script makes it lossless.
# Unproven on hardware here (docs/rdma.md): checked against the tools' documented syntax.
set -eu

for tool in mlnx_qos cma_roce_tos; do
    command -v "$tool" >/dev/null || { echo "clustergen-roce-qos: $tool not found (mlnx-tools / DOCA-OFED)" >&2; exit 1; }
done

# mlnx_qos --help (NVIDIA mlnx-tools): "-i INTF, --interface=INTF  Interface name";
# "--trust=TRUST  set priority trust state to pcp or dscp";
# "-f LIST, --pfc=LIST  Set priority flow control for each priority. LIST is comma separated value
# for each priority starting from 0 to 7. Example: 0,0,0,0,1,1,1,1 enable PFC on TC4-7".
# ECN, both roles of the port (NVIDIA MLNX_OFED "Explicit Congestion Notification (ECN)":
# echo 1 > /sys/class/net/<interface>/ecn/<protocol>/enable/<X>, protocol roce_rp
# (reaction point, the sender) or roce_np (notification point, the receiver), X the priority).
# The ToS of RDMA CM connections (NVIDIA "cma_roce_tos -d <ib_device> -t <tos>"), as NCCL's.

# mlx5_0 (enP2p1s0f0np0).
mlnx_qos -i enP2p1s0f0np0 --trust dscp --pfc 0,0,0,1,0,0,0,0
echo 1 > /sys/class/net/enP2p1s0f0np0/ecn/roce_rp/enable/3
echo 1 > /sys/class/net/enP2p1s0f0np0/ecn/roce_np/enable/3
cma_roce_tos -d mlx5_0 -t 106

# mlx5_1 (enP2p1s0f1np1).
mlnx_qos -i enP2p1s0f1np1 --trust dscp --pfc 0,0,0,1,0,0,0,0
echo 1 > /sys/class/net/enP2p1s0f1np1/ecn/roce_rp/enable/3
echo 1 > /sys/class/net/enP2p1s0f1np1/ecn/roce_np/enable/3
cma_roce_tos -d mlx5_1 -t 106

# mlx5_2 (enP3p1s0f0np0).
mlnx_qos -i enP3p1s0f0np0 --trust dscp --pfc 0,0,0,1,0,0,0,0
echo 1 > /sys/class/net/enP3p1s0f0np0/ecn/roce_rp/enable/3
echo 1 > /sys/class/net/enP3p1s0f0np0/ecn/roce_np/enable/3
cma_roce_tos -d mlx5_2 -t 106

# mlx5_3 (enP3p1s0f1np1).
mlnx_qos -i enP3p1s0f1np1 --trust dscp --pfc 0,0,0,1,0,0,0,0
echo 1 > /sys/class/net/enP3p1s0f1np1/ecn/roce_rp/enable/3
echo 1 > /sys/class/net/enP3p1s0f1np1/ecn/roce_np/enable/3
cma_roce_tos -d mlx5_3 -t 106

# mlx5_4 (enP18p1s0f0np0).
mlnx_qos -i enP18p1s0f0np0 --trust dscp --pfc 0,0,0,1,0,0,0,0
echo 1 > /sys/class/net/enP18p1s0f0np0/ecn/roce_rp/enable/3
echo 1 > /sys/class/net/enP18p1s0f0np0/ecn/roce_np/enable/3
cma_roce_tos -d mlx5_4 -t 106

# mlx5_5 (enP18p1s0f1np1).
mlnx_qos -i enP18p1s0f1np1 --trust dscp --pfc 0,0,0,1,0,0,0,0
echo 1 > /sys/class/net/enP18p1s0f1np1/ecn/roce_rp/enable/3
echo 1 > /sys/class/net/enP18p1s0f1np1/ecn/roce_np/enable/3
cma_roce_tos -d mlx5_5 -t 106

# mlx5_6 (enP19p1s0f0np0).
mlnx_qos -i enP19p1s0f0np0 --trust dscp --pfc 0,0,0,1,0,0,0,0
echo 1 > /sys/class/net/enP19p1s0f0np0/ecn/roce_rp/enable/3
echo 1 > /sys/class/net/enP19p1s0f0np0/ecn/roce_np/enable/3
cma_roce_tos -d mlx5_6 -t 106

# mlx5_7 (enP19p1s0f1np1).
mlnx_qos -i enP19p1s0f1np1 --trust dscp --pfc 0,0,0,1,0,0,0,0
echo 1 > /sys/class/net/enP19p1s0f1np1/ecn/roce_rp/enable/3
echo 1 > /sys/class/net/enP19p1s0f1np1/ecn/roce_np/enable/3
cma_roce_tos -d mlx5_7 -t 106
