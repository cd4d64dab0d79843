"""Verifying an installed PyTorch: the probe (runs in the target interpreter) and the judgement of its output."""
