"""Email through Django's mail backend."""
