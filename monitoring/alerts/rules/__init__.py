"""The alert rules: one module (or folder) per rule family, each a `Rule` (base.py) listed in `engine.RULES`."""
