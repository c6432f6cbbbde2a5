"""The server side of the agent protocol: validate frames, batch them into PostgreSQL, ack after commit."""
