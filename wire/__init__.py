"""What the agent, the server and the browsers share on the wire, free of Django: JSON text with limits."""
