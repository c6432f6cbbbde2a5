"""fleet: the GPU Fleet command line, a client of the JSON API (docs/cli.md). Standard library only."""

VERSION = "0.1.0"
