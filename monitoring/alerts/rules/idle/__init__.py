"""The idle-process rule and everything only it needs: its rule, when its alerts clear, the look-back that
tells forgotten from underused, its idle stretches, and reclaim (warnings, then ending the process)."""
