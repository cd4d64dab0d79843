"""pickvariant: pick, build and verify the right custom PyTorch variant for this machine."""

__version__ = "0.1.0"
