from clustergen.cli.entry import run

run()
