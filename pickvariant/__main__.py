from pickvariant.cli.entry import console_main

raise SystemExit(console_main())
