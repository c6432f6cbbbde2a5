"""GPU health: burn-in records, and the health history a GPU page shows (burn-ins, XIDs, ECC, remapped rows)."""
