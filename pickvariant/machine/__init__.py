"""This machine's facts (or stated ones): CPU, GPUs, driver. Facts only; nothing here decides."""
