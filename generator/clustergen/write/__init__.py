"""The writer: compare a rendered tree with what is on disk, and write it as one
transaction.

The tree is untrusted input (it is committed and reviewed as pull requests): every
path in it is opened through clustergen.write.tree, which follows no link. Only files
clustergen wrote (listed in the manifest) are ever replaced, and a file it no
longer renders is removed only while it is what clustergen wrote there (the digest
the manifest records); everything else in the output directory is left alone.

A write into an existing tree stages every new file as a temporary beside its
target, then commits a journal naming every rename and removal (with the digests
of what each acts on), then applies them, then deletes the journal. A render killed
at any point leaves either no journal (the tree is the old render plus temporaries,
which the next write deletes) or a complete journal (the next write checks that
every entry is clustergen's own, and applies the rest of it).

A write into a directory that does not exist yet builds the whole tree in a staging
folder beside it (.<name>.clustergen-tmp, made with mkdir: one already there is
refused) and renames the folder into place: killed before that, there is no tree
at all, and the next write deletes the folder.

`recover` does all of that, and every command that writes an output directory
calls it first. The commands that write nothing (`plan`, `render --check`) apply
no journal and remove nothing: `pending` says what an interrupted render left.

The modules, each doing one thing: `tree` (every path of the tree, never through a
link), `manifest` (what a render wrote there: the read side plan and audit use),
`changes` (what a write would do to each path, and what it refuses), `disk` (staging
a file and making it durable), `journal` (the renames and removals, and recovery) and
`transaction` (`TreeWrite`, the one way a tree is written).
"""
