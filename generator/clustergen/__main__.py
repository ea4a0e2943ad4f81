from clustergen.cli import main

raise SystemExit(main())
