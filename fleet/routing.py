"""Websocket routes: agents authenticate with a node token, browsers with a session and origin check, scripts
with an API token (accounts/websockets.py)."""

from channels.auth import AuthMiddlewareStack
from channels.routing import URLRouter

from accounts.websockets import TokenOrSession
from fleet.origin import SameOriginValidator
from monitoring.routing import agent_urlpatterns
from monitoring.routing import browser_urlpatterns as monitoring_browser
from training.routing import browser_urlpatterns as training_browser


class PathSplitter:
    """Send agent paths to the agent router and everything else through session auth and origin checks."""

    def __init__(self, agents, browsers):
        self.agents = agents
        self.browsers = browsers

    async def __call__(self, scope, receive, send):
        app = self.agents if scope["path"].startswith("/ws/agent/") else self.browsers
        return await app(scope, receive, send)


def websocket_application():
    pages = URLRouter(monitoring_browser + training_browser)
    browsers = TokenOrSession(tokens=pages, sessions=SameOriginValidator(AuthMiddlewareStack(pages)))
    return PathSplitter(URLRouter(agent_urlpatterns), browsers)
