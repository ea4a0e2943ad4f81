"""The real-Slurm harness: rendered Slurm files handed to the real daemons (Slurm 22.05).

Follows the recipe in shared/reference/testbed.md ("Slurm daemons"):

- the rendered slurm.conf is copied and only what points at the real site is
  overridden (controller address, ports, auth, user, state/spool/log/pid
  paths); keys the installed parser lacks are removed and listed;
- node names resolve through a private hosts file bind-mounted over
  /etc/hosts inside a mount namespace, so the host is never touched;
- accounting goes to a real slurmdbd (with the rendered slurmdbd.conf) backed
  by a private MariaDB, because slurmctld exits when its slurmdbd is missing;
- gres.conf is checked by `slurmd -G` in a mount+UTS namespace whose hostname
  is the node's name and whose /dev holds fake /dev/nvidiaN devices.

Typical use in a test:

    require_real_slurm()
    with SlurmTestbed(out_dir, tmp_path) as bed:
        report = bed.start_controller()
        assert report.nodes["gpu01"].gres == "gpu:h100:8"
        assert bed.slurmd_gres("gpu01", gpu_count=8).problems == []

Every daemon is a child of the test process, started with a parent-death
signal, and stopped by SlurmTestbed.stop() (the context manager calls it), so
none outlives a failing test.

Modules: parse (what scontrol, sinfo and `slurmd -G` print, and the reports),
testbed (SlurmTestbed and the one-call helpers). The config text helpers, the
daemons as child processes and the private MariaDB are the package's own
(clustergen.commands.twin.conf, .process, .accounting), shared with `clustergen twin`.
"""
