from clustergen.entry import main

raise SystemExit(main())
