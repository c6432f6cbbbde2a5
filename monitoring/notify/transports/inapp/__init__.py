"""In-app: the notification row is the message; the person's open pages hear of it at once."""
