from clustergen.entry import run

run()
