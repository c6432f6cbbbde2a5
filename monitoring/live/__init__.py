"""The live fleet: its latest state, the pages and JSON API that show it, and the websocket fan-out to browsers."""
