"""The catalog: its model, how it is loaded and checked, how `catalog sync` derives it from build repositories, and its data files."""
