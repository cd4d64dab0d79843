from pickvariant.entry import main

raise SystemExit(main())
