"""Where builds come from. build.py says what a build is and what a catalog of builds gives the rules (the seam);
hardware.py holds the hardware facts every source is judged against; each source is a folder that fills those
records: flox/ reads the build repositories' Flox/Nix recipes into catalog.json and fetches or renders a recipe.
The rules import build.py and hardware.py, never a source's folder (an import-linter contract)."""
