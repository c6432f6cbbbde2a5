"""Training models: runs and sweeps."""
