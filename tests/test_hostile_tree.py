"""The output tree is untrusted input (issue 21, 1): a site's CI runs `render --check`
and `plan` on a contributor's branch, so anything committed in the tree may be an
attack. Each test plants one, beside a victim folder outside the tree, and checks
that nothing outside the tree changed (every entry and byte of the victim folder)
and what clustergen answered: exit 2 naming the path, or the file left alone.

The writes run both serially and in two processes (clustergen.commands.parallel), whose
families split the tree between them (the child writes facility/, the parent slurm/).
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from clustergen.base import cores
from clustergen.base.errors import UsageError
from clustergen.commands import parallel
from clustergen.write.disk import TEMPORARY, staging_folder
from clustergen.write.journal import JOURNAL
from clustergen.write.manifest import MANIFEST
from clustergen.write.transaction import destination

from support.paths import EXAMPLES

ML = EXAMPLES / "ml-training-8node.yaml"
EDGE = EXAMPLES / "edge-roce-2node.yaml"
SECRET = "vault_munge_key: the operator's own\n"
VICTIM_GRES = "# the victim's own gres.conf\n"


@pytest.fixture(params=["serial", "two"])
def mode(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """A write in one process, or in two (forced on the small reference specs)."""
    if request.param == "serial":
        monkeypatch.setenv("CLUSTERGEN_SERIAL", "1")
    else:
        monkeypatch.delenv("CLUSTERGEN_SERIAL", raising=False)
        monkeypatch.setattr(cores, "MIN_HOSTS", 0)
        monkeypatch.setattr(parallel.os, "sched_getaffinity", lambda pid: {0, 1})
    return str(request.param)


def listing(root: Path) -> dict[str, tuple[str, bytes | str, int]]:
    """Every entry under root, links not followed: its kind, its bytes (a file) or where
    it points (a link), and its mode."""
    entries: dict[str, tuple[str, bytes | str, int]] = {}
    for top, folders, files in os.walk(root):
        for name in [*folders, *files]:
            path = Path(top, name)
            info = path.lstat()
            relative = str(path.relative_to(root))
            if path.is_symlink():
                entries[relative] = ("link", os.readlink(path), info.st_mode)
            elif path.is_dir():
                entries[relative] = ("folder", b"", info.st_mode)
            else:
                entries[relative] = ("file", path.read_bytes(), info.st_mode)
    return entries


@pytest.fixture
def victim(tmp_path: Path) -> Path:
    """A folder beside the tree, with files an attacker would overwrite or remove."""
    folder = tmp_path / "victim"
    folder.mkdir()
    (folder / "slurm.conf").write_text("# the victim's own slurm.conf\n")
    (folder / "gres.conf").write_text(VICTIM_GRES)
    (folder / "secret.txt").write_text("precious secret\n")
    return folder


def rendered(cli, tmp_path: Path, spec: Path = ML) -> Path:  # type: ignore[no-untyped-def]
    out = tmp_path / "tree"
    result = cli("render", str(spec), "-o", str(out))
    assert result.code == 0, result.err
    return out


def sha256(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


@pytest.mark.parametrize("folder", ["slurm", "facility"])
def test_a_symlinked_folder_is_refused_and_nothing_is_written_through_it(
    cli,  # type: ignore[no-untyped-def]
    tmp_path: Path,
    victim: Path,
    mode: str,
    folder: str,
) -> None:
    """tree/slurm -> ../victim: the old render wrote slurm.conf, gres.conf and
    cgroup.conf into victim/. Every command refuses it (exit 2), naming the link."""
    out = rendered(cli, tmp_path)
    before = listing(victim)
    shutil.rmtree(out / folder)
    (out / folder).symlink_to("../victim")
    for argv in (
        ["render", str(ML), "-o", str(out)],
        ["render", str(EDGE), "-o", str(out), "--replace-cluster"],
        ["render", str(ML), "-o", str(out), "--check"],
        ["render", str(ML), "-o", str(out), "--diff"],
        ["plan", str(ML), "-o", str(out)],
    ):
        result = cli(*argv)
        assert result.code == 2, (argv, result.err)
        assert f"refusing {out / folder}: it is a symbolic link" in result.err, argv
        assert "Traceback" not in result.err
        assert listing(victim) == before, argv
    assert (out / folder).is_symlink()


def test_a_symlinked_file_is_never_read_through(
    cli,  # type: ignore[no-untyped-def]
    tmp_path: Path,
    victim: Path,
) -> None:
    """A manifest line naming a link to a file outside the tree: the old render --diff
    printed the file it points at (as a removal) and removed the link. It is refused
    and nothing of the victim's file is read or printed."""
    out = rendered(cli, tmp_path)
    before = listing(victim)
    (out / "notes.txt").symlink_to("../victim/secret.txt")
    with (out / MANIFEST).open("a") as manifest:
        manifest.write("notes.txt\n")
    for argv in (
        ["render", str(ML), "-o", str(out), "--check", "--diff"],
        ["render", str(ML), "-o", str(out), "--diff"],
        ["render", str(ML), "-o", str(out)],
        ["plan", str(ML), "-o", str(out)],
    ):
        result = cli(*argv)
        assert result.code == 2, (argv, result.err)
        assert f"refusing {out / 'notes.txt'}: it is a symbolic link" in result.err
        assert "precious secret" not in result.out + result.err
        assert listing(victim) == before
        assert (out / "notes.txt").is_symlink()


@pytest.mark.parametrize(
    "line",
    [
        "secrets.yml",  # as the previous release wrote lines: no digest
        "secrets.yml\t" + sha256(b"what clustergen would have written\n"),
    ],
    ids=["without-digest", "other-digest"],
)
def test_a_manifest_line_naming_the_operators_file_does_not_remove_it(
    cli,  # type: ignore[no-untyped-def]
    tmp_path: Path,
    mode: str,
    line: str,
) -> None:
    """secrets.yml added to the manifest: the old render removed the operator's vault
    file ("1 removed"). It is left alone, named, and no longer listed."""
    out = rendered(cli, tmp_path)
    (out / "secrets.yml").write_text(SECRET)
    with (out / MANIFEST).open("a") as manifest:
        manifest.write(line + "\n")
    check = cli("render", str(ML), "-o", str(out), "--check")
    assert check.code == 1, check.err
    assert "left secrets.yml alone" in check.err
    planned = cli("plan", str(ML), "-o", str(out))
    assert "secrets.yml (no longer rendered; left alone" in planned.out
    result = cli("render", str(ML), "-o", str(out))
    assert result.code == 0, result.err
    assert "left secrets.yml alone" in result.err
    assert "0 removed, 1 left alone" in result.out
    assert (out / "secrets.yml").read_text() == SECRET
    assert "secrets.yml" not in (out / MANIFEST).read_text()
    assert cli("render", str(ML), "-o", str(out), "--check").code == 0


def test_a_file_clustergen_wrote_and_no_longer_renders_is_removed_unless_edited(
    cli,  # type: ignore[no-untyped-def]
    tmp_path: Path,
    mode: str,
) -> None:
    """The other side of the digests: a file no longer rendered is removed while it is
    what clustergen wrote, and left alone (named) once someone edited it."""
    out = rendered(cli, tmp_path)
    edited = out / "acceptance" / "debug" / "dcgm-diag.sbatch"  # ML renders it, EDGE not
    untouched = out / "acceptance" / "debug" / "ib-rails.sbatch"
    assert edited.is_file() and untouched.is_file()
    edited.write_text(edited.read_text() + "# a hand edit\n")
    result = cli("render", str(EDGE), "-o", str(out), "--replace-cluster")
    assert result.code == 0, result.err
    assert "left acceptance/debug/dcgm-diag.sbatch alone" in result.err
    assert edited.read_text().endswith("# a hand edit\n")
    assert not untouched.exists()


@pytest.mark.parametrize("command", ["plan", "check"])
def test_a_committed_journal_is_never_applied_by_plan_or_check(
    cli,  # type: ignore[no-untyped-def]
    tmp_path: Path,
    command: str,
) -> None:
    """A committed .clustergen-journal with a remove line: the old `plan`, which writes
    nothing, applied it and deleted the file. plan and --check apply nothing, say an
    interrupted render is pending, and the tree is byte for byte as it was."""
    out = rendered(cli, tmp_path)
    (out / "secrets.yml").write_text(SECRET)
    digest = sha256(SECRET.encode())
    (out / JOURNAL).write_text(f"remove secrets.yml\nremove {digest} secrets.yml\n")
    (out / f".slurm.conf{TEMPORARY}").write_text("staged?\n")
    before = listing(out)
    if command == "plan":
        result = cli("plan", str(ML), "-o", str(out))
        assert result.code == 0, result.err
    else:
        result = cli("render", str(ML), "-o", str(out), "--check")
        assert result.code == 1, result.err
    assert "a render was interrupted there" in result.err
    assert "Nothing of it was applied" in result.err
    assert listing(out) == before


@pytest.mark.parametrize(
    "journal",
    [
        "remove slurm/gres.conf\n",  # as the previous release wrote it
        f"remove {sha256(VICTIM_GRES.encode())} slurm/gres.conf\n",
        "remove sha256:{secrets} ../tree/../victim/secret.txt\n",
    ],
    ids=["old-format", "through-a-link", "outside"],
)
def test_a_journal_acting_outside_the_tree_is_refused_by_a_write(
    cli,  # type: ignore[no-untyped-def]
    tmp_path: Path,
    victim: Path,
    mode: str,
    journal: str,
) -> None:
    """A write applies a journal only once every entry is checked to be clustergen's:
    a line through a symlinked folder, or out of the tree, is refused (exit 2) with
    nothing of the journal applied."""
    out = rendered(cli, tmp_path)
    before = listing(victim)
    (out / "slurm" / "gres.conf").unlink()
    (out / "slurm" / "gres.conf").symlink_to("../../victim/gres.conf")
    for name in ("slurm.conf", "cgroup.conf"):
        (out / "slurm" / name).unlink()
    os.replace(out / "slurm", out / "slurm-was")
    (out / "slurm").symlink_to("../victim")
    secret = sha256((victim / "secret.txt").read_bytes()).removeprefix("sha256:")
    (out / JOURNAL).write_text(journal.replace("{secrets}", secret))
    result = cli("render", str(ML), "-o", str(out))
    assert result.code == 2, result.err
    assert "Traceback" not in result.err
    assert listing(victim) == before


@pytest.mark.parametrize("staged", [True, False], ids=["temporary-planted", "no-temporary"])
def test_a_journal_replacing_the_operators_file_is_refused(
    cli,  # type: ignore[no-untyped-def]
    tmp_path: Path,
    mode: str,
    staged: bool,
) -> None:
    """A journal whose replace line names the operator's file, with a planted
    temporary: what it records is not what is there, so a write refuses it and the
    file is as it was."""
    out = rendered(cli, tmp_path)
    (out / "secrets.yml").write_text(SECRET)
    planted = b"vault_munge_key: the attacker's\n"
    if staged:
        (out / f".secrets.yml{TEMPORARY}").write_bytes(planted)
    (out / JOURNAL).write_text(f"replace {sha256(planted)} - secrets.yml\nreplace secrets.yml\n")
    result = cli("render", str(ML), "-o", str(out))
    assert result.code == 2, result.err
    assert (out / "secrets.yml").read_text() == SECRET
    (out / JOURNAL).write_text(f"replace {sha256(planted)} - secrets.yml\n")
    result = cli("render", str(ML), "-o", str(out))
    assert result.code == 2, result.err
    assert "refusing the clustergen journal" in result.err
    assert (out / "secrets.yml").read_text() == SECRET


def test_a_journal_removes_only_what_the_manifest_lists_with_that_digest(
    cli,  # type: ignore[no-untyped-def]
    tmp_path: Path,
) -> None:
    """A committed journal `remove <digest of the operator's file> site-notes.txt`: the
    digest is the journal's own claim, and the file is what it says, but clustergen never
    wrote it (the manifest does not list it). The old write deleted it and reported "0
    removed"; now the whole journal is refused, naming the step, and nothing is applied,
    the other steps included."""
    out = rendered(cli, tmp_path)
    notes = b"the site's own notes\n"
    (out / "site-notes.txt").write_bytes(notes)
    gres = (out / "slurm" / "gres.conf").read_bytes()
    (out / JOURNAL).write_text(
        f"remove {sha256(gres)} slurm/gres.conf\nremove {sha256(notes)} site-notes.txt\n"
    )
    before = listing(out)
    result = cli("render", str(ML), "-o", str(out))
    assert result.code == 2, result.err
    assert "refusing the clustergen journal" in result.err
    assert "'remove site-notes.txt'" in result.err
    assert "the manifest does not list that file as clustergen's" in result.err
    assert listing(out) == before


@pytest.mark.parametrize("target", [".git/HEAD", "slurm/slurm.conf"])
def test_a_journal_replaces_only_with_what_this_render_renders(
    cli,  # type: ignore[no-untyped-def]
    tmp_path: Path,
    target: str,
) -> None:
    """A replace line with a planted temporary, over a file outside clustergen's (.git's
    HEAD) or over one of its own with other contents than this render's: refused, and
    the file is as it was."""
    out = rendered(cli, tmp_path)
    (out / ".git").mkdir()
    (out / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    current = (out / target).read_bytes()
    planted = b"ref: refs/heads/attacker\n"
    folder, name = os.path.split(target)
    (out / folder / f".{name}{TEMPORARY}").write_bytes(planted)
    (out / JOURNAL).write_text(f"replace {sha256(planted)} {sha256(current)} {target}\n")
    result = cli("render", str(ML), "-o", str(out))
    assert result.code == 2, result.err
    assert f"'replace {target}'" in result.err
    assert (out / target).read_bytes() == current


def test_a_manifest_line_removes_nothing_outside_clustergen_s_folders(
    cli,  # type: ignore[no-untyped-def]
    tmp_path: Path,
) -> None:
    """Manifest lines (committed, so untrusted) naming the site's own file and git's
    HEAD with their true digests: the old render deleted both ("2 removed"), breaking
    the checkout. Only files in a family's folder are ever removed; these stay, named."""
    out = rendered(cli, tmp_path)
    (out / "site").mkdir()
    (out / "site" / "notes.md").write_text("site runbook, not clustergen\n")
    (out / ".git").mkdir()
    (out / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    with (out / MANIFEST).open("a") as manifest:
        for path in ("site/notes.md", ".git/HEAD"):
            manifest.write(f"{path}\t{sha256((out / path).read_bytes())}\n")
    result = cli("render", str(ML), "-o", str(out))
    assert result.code == 0, result.err
    assert (out / "site" / "notes.md").exists() and (out / ".git" / "HEAD").exists()
    assert "left site/notes.md alone" in result.err and "left .git/HEAD alone" in result.err


# What a contributor plants where ansible-playbook loads files unasked (write/changes.py,
# ANSIBLE_FOLDERS): an inventory script, a filter plugin beside the playbook, a role's
# module, host_vars in a folder of the node's name; a rendered-files list for a group
# clustergen renders none for (group_vars/all.yml loads files/groups/<group>.yml of every
# group of the node: the rendered_files role would install its entries as root).
PLANTED_FOR_ANSIBLE = (
    "inventory/zz_dynamic.sh",
    "filter_plugins/x.py",
    "roles/slurm/library/m.py",
    "inventory/host_vars/gpu01/extra.yml",
    "files/groups/login.yml",
)


def test_files_planted_where_ansible_loads_them_fail_the_check_and_are_named(
    cli,  # type: ignore[no-untyped-def]
    tmp_path: Path,
) -> None:
    """Each file that ansible-playbook would load though clustergen did not render it:
    render --check fails naming it (the tree was "up to date" with all of them, and plan
    said "Nothing to do"), plan and render name it; a file of the site's elsewhere
    (site/notes.md) is none of its business."""
    out = rendered(cli, tmp_path)
    assert cli("render", str(ML), "-o", str(out), "--check").code == 0
    for path in (*PLANTED_FOR_ANSIBLE, "site/notes.md"):
        (out / path).parent.mkdir(parents=True, exist_ok=True)
        (out / path).write_text("#!/bin/sh\nid > /tmp/pwned\n")
    (out / "inventory/zz_dynamic.sh").chmod(0o755)
    check = cli("render", str(ML), "-o", str(out), "--check")
    assert check.code == 1, check.err
    named = [line.split(": ")[2] for line in check.err.splitlines() if ": unrendered: " in line]
    assert named == sorted(PLANTED_FOR_ANSIBLE), check.err
    assert f"{len(PLANTED_FOR_ANSIBLE)} not rendered where Ansible loads them" in check.err
    planned = cli("plan", str(ML), "-o", str(out))
    assert planned.err.count(": unrendered: ") == len(PLANTED_FOR_ANSIBLE), planned.err
    result = cli("render", str(ML), "-o", str(out))
    assert result.code == 0, result.err
    assert result.err.count(": unrendered: ") == len(PLANTED_FOR_ANSIBLE), result.err
    assert all((out / path).exists() for path in PLANTED_FOR_ANSIBLE)  # the site's to remove


FILTER = "roles/pinned_packages/filter_plugins"


def test_the_byte_code_python_writes_for_a_rendered_plugin_is_not_a_plant(
    cli,  # type: ignore[no-untyped-def]
    tmp_path: Path,
) -> None:
    """ansible-playbook imports the roles' filter plugins, and Python caches them in
    __pycache__: a working copy where site.yml ran stays up to date (CI's run found every
    repository-top check failing on the caches its tests' imports left). A cache Python
    may take without reading the source (hash-based, unchecked: PEP 552), one named
    for another source, or one whose recorded mtime is not the source's is reported."""
    import importlib.util
    import py_compile

    out = rendered(cli, tmp_path)
    subprocess.run(
        [sys.executable, "-c", "import pinned_versions"],
        cwd=out / FILTER,
        check=True,
        env={**os.environ, "PYTHONDONTWRITEBYTECODE": ""},
    )
    caches = sorted((out / FILTER / "__pycache__").iterdir())
    assert [c.name for c in caches] == [f"pinned_versions.{sys.implementation.cache_tag}.pyc"]
    assert cli("render", str(ML), "-o", str(out), "--check").code == 0
    tag = sys.implementation.cache_tag
    source = out / FILTER / "pinned_versions.py"
    planted = {
        # what Python takes without looking at the source
        f"{FILTER}/__pycache__/pinned_versions.{tag}.opt-1.pyc": "unchecked",
        # a module clustergen does not render
        f"{FILTER}/__pycache__/evil.{tag}.pyc": "timestamp",
    }
    for path, mode in planted.items():
        py_compile.compile(
            str(source),
            cfile=str(out / path),
            invalidation_mode=(
                py_compile.PycInvalidationMode.UNCHECKED_HASH
                if mode == "unchecked"
                else py_compile.PycInvalidationMode.TIMESTAMP
            ),
        )
    assert (out / next(iter(planted))).read_bytes()[:4] == importlib.util.MAGIC_NUMBER
    check = cli("render", str(ML), "-o", str(out), "--check")
    named = [line.split(": ")[2] for line in check.err.splitlines() if ": unrendered: " in line]
    assert check.code == 1 and named == sorted(planted), check.err
    for path in planted:
        (out / path).unlink()
    os.utime(source, (1, 1))  # the cache now records another mtime than the source's
    check = cli("render", str(ML), "-o", str(out), "--check")
    named = [line.split(": ")[2] for line in check.err.splitlines() if ": unrendered: " in line]
    assert named == [str(caches[0].relative_to(out))], check.err


@pytest.mark.parametrize("planted", ["link", "folder-with-a-link"])
def test_a_planted_staging_folder_is_refused_for_a_new_tree(
    cli,  # type: ignore[no-untyped-def]
    tmp_path: Path,
    victim: Path,
    mode: str,
    planted: str,
) -> None:
    """.<name>.clustergen-tmp planted beside a tree to be made: as a link, the old
    render sent the whole tree into its target and the output folder became a link.
    Refused (exit 2), the victim untouched, and no output folder made."""
    staging = tmp_path / f".tree{TEMPORARY}"
    if planted == "link":
        staging.symlink_to("victim")
    else:
        staging.mkdir()
        (staging / "slurm").symlink_to("../victim")
    before = listing(victim)
    result = cli("render", str(ML), "-o", str(tmp_path / "tree"))
    assert result.code == 2, result.err
    assert f"refusing {staging}" in result.err
    assert listing(victim) == before
    assert not os.path.lexists(tmp_path / "tree")
    assert staging.is_symlink() or (staging / "slurm").is_symlink()


def test_the_staging_folder_is_made_never_taken_over(tmp_path: Path) -> None:
    """Made with mkdir: one that appears after the sweep (a race, or a planted folder)
    is refused, not written into."""
    out = tmp_path / "tree"
    staging_folder(out).mkdir()
    with pytest.raises(UsageError, match=r"refusing .*clustergen-tmp: it exists"):
        destination(out)


@pytest.mark.parametrize("spec", [ML, EDGE], ids=lambda p: p.stem)
def test_the_rendered_gitignore_keeps_secrets_and_leftovers_out_and_every_rendered_file_in(
    cli,  # type: ignore[no-untyped-def]
    tmp_path: Path,
    spec: Path,
) -> None:
    """git itself reads the rendered .gitignore: the vault file, a journal and
    temporaries are ignored, and no file clustergen renders is."""
    out = rendered(cli, tmp_path, spec)
    rendered_paths = sorted(
        str(p.relative_to(out)) for p in out.rglob("*") if p.is_file() or p.is_symlink()
    )
    leftovers = ["secrets.yml", JOURNAL, f".x{TEMPORARY}", f"slurm/.slurm.conf{TEMPORARY}"]
    for path in leftovers:
        (out / path).write_text("not for the repository\n")
    git = ["git", "-C", str(out), "-c", "core.excludesFile=/dev/null"]
    subprocess.run([*git, "init", "-q"], check=True)
    ignored = subprocess.run(
        [*git, "check-ignore", "--no-index", "--stdin"],
        input="\n".join([*leftovers, *rendered_paths]) + "\n",
        capture_output=True,
        text=True,
        check=False,
    )
    assert ignored.returncode in (0, 1), ignored.stderr
    assert sorted(ignored.stdout.split()) == sorted(leftovers)


def test_the_output_folder_itself_may_be_a_link_the_user_named(
    cli,  # type: ignore[no-untyped-def]
    tmp_path: Path,
    mode: str,
) -> None:
    """Only what is inside the tree is untrusted: the folder named with -o is the
    user's choice, a link to the real folder included."""
    real = rendered(cli, tmp_path)
    named = tmp_path / "named"
    named.symlink_to(real)
    assert cli("render", str(ML), "-o", str(named), "--check").code == 0
    result = cli("render", str(EDGE), "-o", str(named), "--replace-cluster")
    assert result.code == 0, result.err
    assert "edge-lab" in (real / MANIFEST).read_text()
    assert cli("plan", str(EDGE), "-o", str(named)).code == 0


@pytest.mark.parametrize("line", ["../outside.txt", "/etc/passwd", "slurm/../../x", "a//b"])
def test_a_manifest_line_outside_the_tree_is_refused(cli, tmp_path: Path, line: str) -> None:  # type: ignore[no-untyped-def]
    """clustergen writes only plain relative paths into its manifest: a line that leads
    out of the tree (or is not as clustergen writes them) is refused, naming the line,
    by render, --check and plan, and nothing is written."""
    out = rendered(cli, tmp_path)
    with (out / MANIFEST).open("a") as manifest:
        manifest.write(f"{line}\t{sha256(b'x')}\n")
    before = (out / MANIFEST).read_bytes()
    for argv in (("render",), ("render", "--check"), ("plan",)):
        result = cli(argv[0], str(ML), "-o", str(out), *argv[1:])
        assert result.code == 2, (argv, result.out, result.err)
        assert f"{MANIFEST}:" in result.err and "not a plain relative path" in result.err
    assert (out / MANIFEST).read_bytes() == before


def test_a_path_stays_inside_the_tree_exactly_when_no_component_leaves_it() -> None:
    """tree.inside against its definition (no component empty, '.' or '..', no NUL), on
    every path of up to five pieces of slashes, dots, NULs and names."""
    import itertools

    from clustergen.write.tree import inside

    def by_components(path: str) -> bool:
        parts = path.split("/")
        return "\0" not in path and all(part not in ("", ".", "..") for part in parts)

    pieces = ["a", "/", ".", "..", "\0", "b.", ".c", "..."]
    for length in range(6):
        for combination in itertools.product(pieces, repeat=length):
            path = "".join(combination)
            assert inside(path) == by_components(path), repr(path)
