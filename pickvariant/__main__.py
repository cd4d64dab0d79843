from pickvariant.cli import main

raise SystemExit(main())
