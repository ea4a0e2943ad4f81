"""pull: pull mode's files (ansible.pull; docs/ansible.md "Pull mode"), on every node.

- /etc/clustergen/pull.env: the repository, what the node applies (refs/heads/BRANCH,
  refs/tags/TAG or a commit) and the tree folder;
- /etc/clustergen/pull-gitconfig, pull-allowed-signers (SSH signers), pull-signers.asc
  (OpenPGP signers) and (for ssh) pull-known-hosts: the only git configuration the
  script reads, who may sign a release, and the git server's host keys;
- /usr/local/sbin/clustergen-pull: one run under a lock: fetch, resolve, verify the
  signature, check out exactly that commit, then ansible-playbook on this node alone;
  recorded in /var/lib/clustergen/pull.json (the commit applied, the last good one, a
  failure's tail);
- clustergen-pull.service and clustergen-pull.timer: the run, every `every` after the
  last and after boot, each delayed by up to `jitter`.

Nothing without ansible.pull. The node's inventory name is not rendered here (one file
for every node): roles/ansible_pull writes it beside pull.env.
[src: systemd.timer(5) OnActiveSec, OnUnitActiveSec, RandomizedDelaySec; flock(1) -n;
git-verify-commit(1), gpgv(1) --keyring and --status-fd (VALIDSIG's last field is the
primary key's fingerprint, GnuPG's doc/DETAILS), git's commit-object signature header
(gpgsig, removed from the payload signed: Documentation/gitformat-signature.txt),
git-config(1) gpg.ssh.allowedSignersFile, core.sshCommand and
GIT_CONFIG_GLOBAL/GIT_CONFIG_NOSYSTEM (git(1) ENVIRONMENT VARIABLES); ssh-keygen(1)
ALLOWED SIGNERS; ansible-core's lib/ansible/modules/git.py, whose checkout takes a
branch before a tag or commit of the same name, hence the script's own checkout.]
"""

from __future__ import annotations

import jinja2

from clustergen.base.artifacts import NO_CHANGE, Artifact, Install, NodeChange
from clustergen.catalog.groups import ANSIBLE_PULL_GROUP
from clustergen.resolve import ResolvedCluster
from clustergen.templating import render_template

# Its role includes rendered_files for it and defines the handlers it notifies.
OWN_ROLE = True

UNITS = "/etc/systemd/system"
SERVICE = "clustergen-pull.service"
TIMER = "clustergen-pull.timer"
SCRIPT = "/usr/local/sbin/clustergen-pull"
SETTINGS = "/etc/clustergen/pull.env"
GITCONFIG = "/etc/clustergen/pull-gitconfig"
ALLOWED_SIGNERS = "/etc/clustergen/pull-allowed-signers"
OPENPGP_SIGNERS = "/etc/clustergen/pull-signers.asc"
KNOWN_HOSTS = "/etc/clustergen/pull-known-hosts"
# The site places it for an ssh repository, root-only; never rendered (the script refuses
# a key others can read).
DEPLOY_KEY = "/etc/clustergen/pull-deploy-key"
# Where ansible-pull checks the repository out, and the run's record (docs/ansible.md).
CHECKOUT = "/var/lib/clustergen/site"
STATE = "/var/lib/clustergen/pull.json"
# The site places it, root-only; never rendered (docs/security.md's vault).
VAULT_PASSWORD_FILE = "/etc/clustergen/vault-password"
# This node's secrets, written root-only by roles/ansible_pull from the push converge.
SECRETS = "/etc/clustergen/pull-secrets.yml"


def render(cluster: ResolvedCluster, env: jinja2.Environment) -> list[Artifact]:
    ansible = cluster.spec.ansible
    if ansible is None or ansible.pull is None:
        return []
    pull = ansible.pull
    context = {
        "pull": pull,
        "script": SCRIPT,
        "settings": SETTINGS,
        "checkout": CHECKOUT,
        "state": STATE,
        "vault_password_file": VAULT_PASSWORD_FILE,
        "secrets": SECRETS,
        "service": SERVICE,
        "gitconfig": GITCONFIG,
        "allowed_signers": ALLOWED_SIGNERS,
        "openpgp_signers": OPENPGP_SIGNERS,
        "known_hosts": KNOWN_HOSTS,
        "deploy_key": DEPLOY_KEY,
    }
    restart_timer = NodeChange("restart", TIMER)
    files = [
        ("pull/pull.env", "pull.env.j2", SETTINGS, NO_CHANGE, 0o644),
        ("pull/pull-gitconfig", "pull-gitconfig.j2", GITCONFIG, NO_CHANGE, 0o644),
        ("pull/clustergen-pull", "clustergen-pull.sh.j2", SCRIPT, NO_CHANGE, 0o755),
        (f"pull/{SERVICE}", "clustergen-pull.service.j2", f"{UNITS}/{SERVICE}", NO_CHANGE, 0o644),
        (f"pull/{TIMER}", "clustergen-pull.timer.j2", f"{UNITS}/{TIMER}", restart_timer, 0o644),
    ]
    if pull.ssh_signers:
        files.append(
            (
                "pull/pull-allowed-signers",
                "pull-allowed-signers.j2",
                ALLOWED_SIGNERS,
                NO_CHANGE,
                0o644,
            )
        )
    if pull.gpg_signers:
        files.append(
            ("pull/pull-signers.asc", "pull-signers.asc.j2", OPENPGP_SIGNERS, NO_CHANGE, 0o644)
        )
    if pull.host_keys:
        files.append(
            ("pull/pull-known-hosts", "pull-known-hosts.j2", KNOWN_HOSTS, NO_CHANGE, 0o644)
        )
    return [
        Artifact(
            path,
            render_template(env, f"pull/{template}", cluster, **context),
            mode=mode,
            install=Install(dest, ANSIBLE_PULL_GROUP, change, mode=mode),
        )
        for path, template, dest, change, mode in files
    ]
