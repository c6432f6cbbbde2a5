"""The fleet-wide process table (every GPU process of every node) and ending one process on request."""
