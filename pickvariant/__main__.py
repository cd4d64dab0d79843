from pickvariant.entry import console_main

raise SystemExit(console_main())
