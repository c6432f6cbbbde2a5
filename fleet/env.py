"""Read settings from the environment, failing loudly on values we don't understand."""

import ipaddress
import os
import sys
from urllib.parse import parse_qs, unquote, urlsplit

from django.core.exceptions import ImproperlyConfigured

TRUE_WORDS = {"1", "true", "yes", "on"}
FALSE_WORDS = {"0", "false", "no", "off", ""}


def env_str(name: str, default: str | None = None) -> str:
    value = os.environ.get(name)
    if value is None:
        if default is None:
            raise ImproperlyConfigured(f"{name} is not set")
        return default
    return value


def env_bool(name: str, default: bool = False) -> bool:
    value = os.environ.get(name)
    if value is None:
        return default
    word = value.strip().lower()
    if word in TRUE_WORDS:
        return True
    if word in FALSE_WORDS:
        return False
    raise ImproperlyConfigured(f"{name}={value!r} is not a boolean (use 1/0, true/false, yes/no, on/off)")


def env_int(name: str, default: int, minimum: int | None = None) -> int:
    value = os.environ.get(name)
    if value is None:
        return default
    try:
        number = int(value)
    except ValueError:
        raise ImproperlyConfigured(f"{name}={value!r} is not a whole number") from None
    if minimum is not None and number < minimum:
        raise ImproperlyConfigured(f"{name}={value!r} must be at least {minimum}")
    return number


def env_float(name: str, default: float, minimum: float | None = None) -> float:
    value = os.environ.get(name)
    if value is None:
        return default
    try:
        number = float(value)
    except ValueError:
        raise ImproperlyConfigured(f"{name}={value!r} is not a number") from None
    if number != number or (minimum is not None and number < minimum):
        raise ImproperlyConfigured(f"{name}={value!r} must be a number of at least {minimum}")
    return number


def env_choice(name: str, default: str, choices: tuple[str, ...]) -> str:
    value = os.environ.get(name, default)
    if value not in choices:
        raise ImproperlyConfigured(f"{name}={value!r} must be one of: {', '.join(choices)}")
    return value


def env_list(name: str, default: list[str]) -> list[str]:
    value = os.environ.get(name)
    if value is None:
        return default
    return [item.strip() for item in value.split(",") if item.strip()]


def database_from_url(name: str) -> dict:
    """A Django DATABASES entry from a postgresql:// URL (host may be a socket dir in ?host=)."""
    url = os.environ.get(name)
    if not url:
        raise ImproperlyConfigured(
            f"{name} is not set: export it (postgresql://user@host:5432/db) "
            "or start through `make demo` / `make test`, which start an embedded PostgreSQL"
        )
    parts = urlsplit(url)
    if parts.scheme not in ("postgres", "postgresql"):
        raise ImproperlyConfigured(f"{name} must be a postgresql:// URL, not {parts.scheme or 'empty'}://")
    query = {key: values[-1] for key, values in parse_qs(parts.query).items()}
    dbname = unquote(parts.path.lstrip("/"))
    if not dbname:
        raise ImproperlyConfigured(f"{name} names no database (postgresql://host/DBNAME)")
    try:
        port = parts.port
    except ValueError:
        raise ImproperlyConfigured(f"{name} has a port that is not a number") from None
    return {
        "ENGINE": "django.db.backends.postgresql",
        "NAME": dbname,
        "USER": unquote(parts.username or "") or query.pop("user", "postgres"),
        "PASSWORD": unquote(parts.password or ""),
        "HOST": parts.hostname or query.pop("host", ""),
        "PORT": str(port or query.pop("port", "")),
        "OPTIONS": {key: value for key, value in query.items() if key not in ("host", "port", "user")},
    }


def redis_url(name: str) -> str:
    url = os.environ.get(name)
    if not url:
        raise ImproperlyConfigured(
            f"{name} is not set: export it (redis://127.0.0.1:6379/0) "
            "or start through `make demo` / `make test`, which start an embedded Redis"
        )
    scheme = urlsplit(url).scheme
    if scheme not in ("redis", "rediss", "unix"):
        raise ImproperlyConfigured(f"{name} must be a redis:// URL, not {scheme or 'empty'}://")
    return url


def broker_url(name: str, fallback: str) -> str:
    url = os.environ.get(name) or fallback
    scheme = urlsplit(url).scheme
    if scheme not in ("redis", "rediss", "amqp", "amqps", "pyamqp"):
        raise ImproperlyConfigured(f"{name} must be a redis:// or amqp:// URL, not {scheme or 'empty'}://")
    return url


def env_percent(name: str, default: float) -> float:
    """A percentage above 0 and at most 100."""
    number = env_float(name, default=default, minimum=0.0)
    if not 0 < number <= 100:
        raise ImproperlyConfigured(f"{name}={number!r} must be a percentage above 0 and at most 100")
    return number


def env_int_list(name: str, default: list[int], minimum: int | None = None) -> list[int]:
    """Comma-separated whole numbers, e.g. BUDGET_THRESHOLDS_PCT=50,80,100."""
    value = os.environ.get(name)
    if value is None:
        return default
    numbers = []
    for item in value.split(","):
        try:
            number = int(item.strip())
        except ValueError:
            raise ImproperlyConfigured(f"{name}={value!r} must be comma-separated whole numbers") from None
        if minimum is not None and number < minimum:
            raise ImproperlyConfigured(f"{name}={value!r}: each number must be at least {minimum}")
        numbers.append(number)
    if not numbers:
        raise ImproperlyConfigured(f"{name} is empty")
    return sorted(set(numbers))


def env_networks(name: str, default: list[str]) -> list[str]:
    """Comma-separated IP networks (CIDR, or single addresses), checked at start."""
    networks = env_list(name, default)
    for network in networks:
        try:
            ipaddress.ip_network(network, strict=False)
        except ValueError:
            raise ImproperlyConfigured(f"{name}: {network!r} is not an IP network (e.g. 10.0.0.0/8)") from None
    return networks


def proxy_ssl_header(name: str) -> tuple[str, str] | None:
    """SECURE_PROXY_SSL_HEADER from a header name (`X-Forwarded-Proto`, meaning HTTPS when it says `https`)
    or `Header: value`; empty or unset: None."""
    value = os.environ.get(name, "").strip()
    if not value:
        return None
    header, _, expected = value.partition(":")
    header, expected = header.strip(), expected.strip() or "https"
    if not header.replace("-", "").isalnum():
        raise ImproperlyConfigured(f"{name}: {value!r} is not a header name (e.g. X-Forwarded-Proto)")
    return ("HTTP_" + header.upper().replace("-", "_"), expected)


def renamed(name: str, old: str, zero_error: str = "") -> str:
    """The variable to read for the setting ``name``, formerly ``old``: ``old`` when only it is set (with a
    warning on stderr at start-up), else ``name``. Both set to different values stops start-up; so does
    ``old`` set to 0 when ``zero_error`` says why 0 no longer means what it meant."""
    value, old_value = os.environ.get(name), os.environ.get(old)
    if old_value is None:
        return name
    if value is not None and value.strip() != old_value.strip():
        raise ImproperlyConfigured(
            f"{old}={old_value!r} and {name}={value!r} disagree: {old} is the old name of {name}; keep only {name}"
        )
    if value is None and zero_error and _is_zero(old_value):
        raise ImproperlyConfigured(f"{old}={old_value!r}: {zero_error}")
    print(f"GPU Fleet configuration warning: {old} is deprecated; set {name} instead.", file=sys.stderr)
    return name if value is not None else old


def _is_zero(text: str) -> bool:
    try:
        return float(text) == 0
    except ValueError:
        return False  # not a number: the setting's own reader says so


def env_path_list(name: str, default: list[str]) -> list[str]:
    """Comma-separated absolute paths (a bind mount's ``-v SRC:DST`` has no room for a ':' in either)."""
    paths = env_list(name, default)
    for path in paths:
        if not path.startswith("/") or ":" in path:
            raise ImproperlyConfigured(f"{name}: {path!r} is not an absolute path without ':'")
    return paths
