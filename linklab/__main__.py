from linklab.cli import main

raise SystemExit(main())
