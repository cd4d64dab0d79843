from pickvariant.entry import console

raise SystemExit(console())
