"""An HTTP client for webhook deliveries that connects only to addresses targets.py allows, follows no
redirect and uses no proxy from the environment."""

import http.client
import urllib.request

from monitoring.notify.transports.webhook.targets import connect


def checked_connection(address, timeout, source_address=None):
    return connect(address[0], address[1], timeout, source_address)


# http.client opens every socket through the connection's `_create_connection` (HTTPS then wraps it in TLS
# for the URL's host name, so certificates are checked against the name as usual).
class CheckedHTTPConnection(http.client.HTTPConnection):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._create_connection = checked_connection


class CheckedHTTPSConnection(http.client.HTTPSConnection):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._create_connection = checked_connection


class CheckedHTTPHandler(urllib.request.HTTPHandler):
    def http_open(self, req):
        return self.do_open(CheckedHTTPConnection, req)


class CheckedHTTPSHandler(urllib.request.HTTPSHandler):
    def https_open(self, req):
        return self.do_open(CheckedHTTPSConnection, req, context=self._context)


class NoRedirects(urllib.request.HTTPRedirectHandler):
    """A redirect is answered as the error it is for a webhook: it could lead anywhere."""

    def redirect_request(self, req, fp, code, msg, headers, newurl):
        return None


OPENER = urllib.request.build_opener(
    urllib.request.ProxyHandler({}), CheckedHTTPHandler, CheckedHTTPSHandler, NoRedirects
)
