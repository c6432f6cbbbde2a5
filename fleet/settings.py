"""GPU Fleet settings: everything that differs between machines comes from the environment."""

import socket
import sys
from datetime import timedelta
from pathlib import Path

from fleet.env import (
    broker_url,
    database_from_url,
    env_bool,
    env_choice,
    env_float,
    env_int,
    env_int_list,
    env_list,
    env_networks,
    env_path_list,
    env_percent,
    env_str,
    proxy_ssl_header,
    redis_url,
    renamed,
)

BASE_DIR = Path(__file__).resolve().parent.parent

DEBUG = env_bool("DEBUG", default=False)
SECRET_KEY = env_str("SECRET_KEY", default="insecure-dev-key-set-SECRET_KEY-in-production" if DEBUG else None)
ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", default=["localhost", "127.0.0.1", "[::1]"])
CSRF_TRUSTED_ORIGINS = env_list("CSRF_TRUSTED_ORIGINS", default=[])

# HTTPS (README's configuration table gives the production values; `manage.py check --deploy` is clean with
# them). Off by default so the demo and tests run over plain HTTP.
SECURE_HSTS_SECONDS = env_int("SECURE_HSTS_SECONDS", default=0, minimum=0)
SECURE_HSTS_INCLUDE_SUBDOMAINS = env_bool("SECURE_HSTS_INCLUDE_SUBDOMAINS", default=False)
SECURE_HSTS_PRELOAD = env_bool("SECURE_HSTS_PRELOAD", default=False)
SECURE_SSL_REDIRECT = env_bool("SECURE_SSL_REDIRECT", default=False)
SECURE_REDIRECT_EXEMPT = [r"^healthz$"]  # load balancers probe over plain HTTP
SESSION_COOKIE_SECURE = env_bool("SESSION_COOKIE_SECURE", default=False)
CSRF_COOKIE_SECURE = env_bool("CSRF_COOKIE_SECURE", default=False)
# Behind a TLS proxy: the header it sets to say the request came over HTTPS (deploy/nginx sets
# X-Forwarded-Proto). Only set it when such a proxy is the sole way in: a client could send the header.
SECURE_PROXY_SSL_HEADER = proxy_ssl_header("SECURE_PROXY_SSL_HEADER")

INSTALLED_APPS = [
    # First, so `manage.py runserver` is fleet's (fleet/serving.py's limits) and not staticfiles'.
    "fleet",
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "channels",
    "rest_framework",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "django_celery_beat",
    "axes",
    "inventory",
    "accounts",
    "reservations",
    "monitoring",
    "training",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "csp.middleware.CSPMiddleware",
    # Before the login check, so a NUL in a path or parameter is a 400 for everyone.
    "fleet.api.middleware.RefuseBadText",
    # Then a query parameter the schema does not declare is a 400 naming it (docs/api.md, the contract).
    "fleet.api.middleware.RefuseUnknownParameters",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.auth.middleware.LoginRequiredMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    # Last, as django-axes asks: it turns a locked-out login into accounts/lockout.py's answer.
    "axes.middleware.AxesMiddleware",
]

ROOT_URLCONF = "fleet.urls"
ASGI_APPLICATION = "fleet.asgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "fleet.context_processors.navigation",
                "monitoring.notify.context_processors.notifications",
            ],
        },
    },
]

DATABASES = {"default": database_from_url("DATABASE_URL")}
DATABASES["default"]["CONN_MAX_AGE"] = env_int("DB_CONN_MAX_AGE", default=60, minimum=0)
DATABASES["default"]["CONN_HEALTH_CHECKS"] = True
# The web server answers HTTP requests on WEB_THREADS threads (fleet/asgi.py); its websocket consumers
# run their database calls on a thread per connection, so a connection kept per thread would open a
# PostgreSQL session per browser. fleet/asgi.py turns on a pool of sessions per server process instead,
# one for each request thread and two for the consumers and the ingest batcher; manage.py and Celery,
# whose threads live long, keep one connection per thread.
WEB_THREADS = env_int("WEB_THREADS", default=8, minimum=1)
if env_bool("DB_POOL"):
    DATABASES["default"]["CONN_MAX_AGE"] = 0  # the pool keeps the sessions
    DATABASES["default"].setdefault("OPTIONS", {})["pool"] = {
        "min_size": 1,
        "max_size": env_int("DB_POOL_SIZE", default=WEB_THREADS + 2, minimum=1),
        "timeout": 30,  # seconds a request waits for a free session before it fails
        "name": "web",
    }

REDIS_URL = redis_url("REDIS_URL")
CHANNEL_LAYERS = {
    "default": {
        "BACKEND": "channels_redis.core.RedisChannelLayer",
        # redis-py 8 reads with a 5 s socket timeout by default, exactly channels-redis's 5 s BZPOPMIN wait:
        # every consumer idle for 5 s would die with "Timeout reading". No read timeout (any finite one also
        # hangs cancelling a consumer at loop shutdown); TCP keepalive notices a dead server instead.
        "CONFIG": {
            "hosts": [{"address": REDIS_URL, "socket_timeout": None, "socket_keepalive": True}],
            "capacity": 1000,
            "expiry": 30,
        },
    }
}
CACHES = {"default": {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": REDIS_URL}}

CELERY_BROKER_URL = broker_url("CELERY_BROKER_URL", fallback=REDIS_URL)
CELERY_TASK_DEFAULT_QUEUE = "default"
CELERY_TASK_ACKS_LATE = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
CELERY_BEAT_SCHEDULER = "django_celery_beat.schedulers:DatabaseScheduler"
CELERY_TIMEZONE = "UTC"
CELERY_IMPORTS = ["monitoring.storage.tasks"]
# Periodic tasks, copied into django-celery-beat's tables when beat starts; every app adds its own.
CELERY_BEAT_SCHEDULE = {
    "telemetry-rollup-minutes": {"task": "monitoring.rollup_minutes", "schedule": 30.0},
    "telemetry-rollup-hours": {"task": "monitoring.rollup_hours", "schedule": 300.0},
    "telemetry-retention": {"task": "monitoring.enforce_retention", "schedule": 3600.0},
    "telemetry-partitions": {"task": "monitoring.prepare_partitions", "schedule": 3600.0},
    "telemetry-offline-backstop": {"task": "monitoring.mark_silent_nodes_offline", "schedule": 10.0},
    "watch-reservations": {"task": "fleet.watch_reservations", "schedule": 60.0},
}

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
]
# Login rate limiting (django-axes): LOGIN_FAILURE_LIMIT wrong passwords for one username from one address
# block that pair for LOGIN_LOCKOUT_MINUTES, on the login page, the admin's and POST /api/token/ alike.
# Keyed by the pair, not the address alone, so a proxy's single address does not lock out everybody; an
# admin unlocks early in the admin ("Access attempts") or with `manage.py axes_reset_username NAME`.
AUTHENTICATION_BACKENDS = [
    "axes.backends.AxesStandaloneBackend",
    "django.contrib.auth.backends.ModelBackend",
]
AXES_ENABLED = env_bool("LOGIN_RATE_LIMIT", default=True)
AXES_FAILURE_LIMIT = env_int("LOGIN_FAILURE_LIMIT", default=5, minimum=1)
AXES_COOLOFF_TIME = timedelta(minutes=env_int("LOGIN_LOCKOUT_MINUTES", default=15, minimum=1))
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"]]
AXES_RESET_ON_SUCCESS = True
AXES_LOCKOUT_CALLABLE = "accounts.lockout.lockout_response"
AXES_VERBOSE = False
# The client's address: REMOTE_ADDR, unless a proxy in front sets X-Forwarded-For (deploy/nginx).
AXES_IPWARE_PROXY_ORDER = "right-most"  # nginx appends the address it saw; anything left of it came from the client
AXES_IPWARE_PROXY_COUNT = env_int("TRUSTED_PROXY_COUNT", default=0, minimum=0) or None
AXES_IPWARE_META_PRECEDENCE_ORDER = (
    ["HTTP_X_FORWARDED_FOR", "REMOTE_ADDR"] if AXES_IPWARE_PROXY_COUNT else ["REMOTE_ADDR"]
)
# Content-Security-Policy (django-csp): pages load scripts, styles, images, fonts and connections from this
# site only, and run no inline script or style: scripts live in static/js/, styles in static/css/. Sizes and
# colours known only at render time travel as data-css-* attributes that static/js/sizes.js applies through
# the CSSOM (element.style), which the policy does not govern, as Plotly draws its charts; the stylesheets
# Plotly would add inline are static files (templates/_plotly.html).
CONTENT_SECURITY_POLICY = {
    "DIRECTIVES": {
        "default-src": ["'self'"],
        "script-src": ["'self'"],
        "style-src": ["'self'"],
        "img-src": ["'self'", "data:"],
        "font-src": ["'self'"],
        "connect-src": ["'self'"],
        "object-src": ["'none'"],
        "base-uri": ["'self'"],
        "form-action": ["'self'"],
        "frame-ancestors": ["'none'"],
    }
}
LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "fleet:fleet"
LOGOUT_REDIRECT_URL = "login"

LANGUAGE_CODE = "en-us"
TIME_ZONE = env_str("TIME_ZONE", default="UTC")
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
STATIC_ROOT = Path(env_str("STATIC_ROOT", default=str(BASE_DIR / "var" / "static")))
STATIC_ROOT.mkdir(parents=True, exist_ok=True)  # WhiteNoise warns at every start when it is missing
WHITENOISE_USE_FINDERS = True
WHITENOISE_AUTOREFRESH = DEBUG

DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

EMAIL_BACKEND = env_str("EMAIL_BACKEND", default="django.core.mail.backends.smtp.EmailBackend")
EMAIL_HOST = env_str("EMAIL_HOST", default="localhost")
EMAIL_PORT = env_int("EMAIL_PORT", default=25, minimum=1)
EMAIL_HOST_USER = env_str("EMAIL_HOST_USER", default="")
EMAIL_HOST_PASSWORD = env_str("EMAIL_HOST_PASSWORD", default="")
EMAIL_USE_TLS = env_bool("EMAIL_USE_TLS", default=False)
DEFAULT_FROM_EMAIL = env_str("DEFAULT_FROM_EMAIL", default="gpu-fleet@localhost")

REST_FRAMEWORK = {
    # The token first: DRF answers a failed or missing login with the first class's challenge, so a wrong
    # token gets 401 with `WWW-Authenticate: Bearer, Token`, not 403.
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "accounts.authentication.TokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    "DEFAULT_SCHEMA_CLASS": "fleet.api.schema.FleetAutoSchema",
    # Request bodies are JSON only, every string checked for NUL and lone surrogates (fleet/api/text.py).
    "DEFAULT_PARSER_CLASSES": ["fleet.api.parsers.JSONParser"],
    # Every 4xx answers {"detail": sentence, "errors": {field: [messages]}} (docs/api.md#errors).
    "EXCEPTION_HANDLER": "fleet.api.errors.exception_handler",
    "TEST_REQUEST_DEFAULT_FORMAT": "json",
    # Every list comes in pages of {"count", "next", "previous", "results"}.
    "DEFAULT_PAGINATION_CLASS": "fleet.api.pagination.Pages",
}
SPECTACULAR_SETTINGS = {
    "TITLE": "GPU Fleet API",
    "DESCRIPTION": "Fleet inventory, live telemetry, reservations, training runs and alerts.",
    "VERSION": "1",
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    "SERVE_PERMISSIONS": ["rest_framework.permissions.IsAuthenticated"],
    # Each choice set is one named enum, whatever the field that uses it is called.
    "ENUM_NAME_OVERRIDES": {
        "AlertKindEnum": "monitoring.alerts.choices.AlertKind",
        "AlertStatusEnum": "monitoring.alerts.choices.AlertStatus",
        "AlertSeverityEnum": "monitoring.alerts.choices.AlertSeverity",
        "AlertEventKindEnum": "monitoring.alerts.choices.AlertEventKind",
        "DeliveryEnum": "monitoring.notify.choices.Delivery",  # email_delivery and webhook_delivery share it
    },
}

# Telemetry (the agent protocol, docs/agent-protocol.md).
AGENT_INTERVAL_S = env_float("AGENT_INTERVAL_S", default=1.0, minimum=0.1)
AGENT_MAX_FRAME_BYTES = env_int("AGENT_MAX_FRAME_BYTES", default=1024 * 1024, minimum=1024)
# Per agent node (monitoring/ingest/limits.py): frames and bytes a second, and bursts of this many seconds
# of each (an agent's replay of its one-hour buffer about fits); beyond them an error and close 4429.
AGENT_MAX_FRAMES_PER_S = env_float("AGENT_MAX_FRAMES_PER_S", default=100.0, minimum=1.0)
AGENT_MAX_BYTES_PER_S = env_float("AGENT_MAX_BYTES_PER_S", default=256 * 1024, minimum=1024)
AGENT_LIMIT_BURST_S = env_float("AGENT_LIMIT_BURST_S", default=60.0, minimum=1.0)
METRICS_TOKEN = env_str("METRICS_TOKEN", default="")
# Ingest: frames from every agent connection wait up to INGEST_FLUSH_MS (or until INGEST_FLUSH_SAMPLES
# samples are waiting) and are written in one transaction (COPY through staging tables).
INGEST_FLUSH_MS = env_float("INGEST_FLUSH_MS", default=20.0, minimum=1.0)
INGEST_FLUSH_SAMPLES = env_int("INGEST_FLUSH_SAMPLES", default=5000, minimum=1)
# Retention: raw samples, then 1-minute rollups, then 1-hour rollups (0 keeps them forever).
FLEET_RAW_RETENTION_HOURS = env_int("FLEET_RAW_RETENTION_HOURS", default=48, minimum=2)
FLEET_MINUTE_RETENTION_DAYS = env_int("FLEET_MINUTE_RETENTION_DAYS", default=90, minimum=1)
FLEET_HOUR_RETENTION_DAYS = env_int("FLEET_HOUR_RETENTION_DAYS", default=0, minimum=0)

# Live pages (docs/fleet-view.md): browsers get at most one coalesced update per tick and server process.
LIVE_TICK_S = env_float("LIVE_TICK_S", default=0.25, minimum=0.02)
LIVE_OWNER_CACHE_S = env_float("LIVE_OWNER_CACHE_S", default=30.0, minimum=0.0)

# Alerts, costs and budgets (docs/alerts.md).
ALERT_EVAL_INTERVAL_S = env_float("ALERT_EVAL_INTERVAL_S", default=30.0, minimum=1.0)
ALERT_IDLE_MIN_MEMORY_MIB = env_int("ALERT_IDLE_MIN_MEMORY_MIB", default=1024, minimum=0)
ALERT_IDLE_MAX_UTIL_PCT = env_percent("ALERT_IDLE_MAX_UTIL_PCT", default=5.0)
ALERT_IDLE_WINDOW_MIN = env_int("ALERT_IDLE_WINDOW_MIN", default=30, minimum=1)
# Forgotten, not underused: no sample at or above the work threshold for this many hours before the idle window.
ALERT_IDLE_FORGOTTEN_H = env_float("ALERT_IDLE_FORGOTTEN_H", default=3.0, minimum=0.0)
ALERT_IDLE_WORK_PCT = env_percent("ALERT_IDLE_WORK_PCT", default=30.0)
# Hysteresis: an open alert clears only when its clearing condition held this long (a busy sample clears at once).
ALERT_RESOLVE_WINDOW_MIN = env_int("ALERT_RESOLVE_WINDOW_MIN", default=5, minimum=1)
ALERT_RESOLVE_UTIL_MARGIN_PCT = env_float("ALERT_RESOLVE_UTIL_MARGIN_PCT", default=5.0, minimum=0.0)
ALERT_RESOLVE_MEMORY_FRACTION = env_float("ALERT_RESOLVE_MEMORY_FRACTION", default=0.9, minimum=0.0)
ALERT_REOPEN_WITHIN_H = env_float("ALERT_REOPEN_WITHIN_H", default=24.0, minimum=0.0)
ALERT_NO_DATA_MIN = env_int("ALERT_NO_DATA_MIN", default=15, minimum=1)
ALERT_ESCALATE_AFTER_H = env_float("ALERT_ESCALATE_AFTER_H", default=24.0, minimum=0.0)
ALERT_HEALTH_WINDOW_S = env_int("ALERT_HEALTH_WINDOW_S", default=120, minimum=1)
ALERT_TEMP_C = env_float("ALERT_TEMP_C", default=85.0, minimum=0.0)
ALERT_RUN_OVERDUE_FACTOR = env_float("ALERT_RUN_OVERDUE_FACTOR", default=1.5, minimum=1.0)
ALERT_SQUATTING_STALE_S = env_int("ALERT_SQUATTING_STALE_S", default=180, minimum=1)
COST_FORECAST_RECENT_H = env_int("COST_FORECAST_RECENT_H", default=24, minimum=1)
BUDGET_THRESHOLDS_PCT = env_int_list("BUDGET_THRESHOLDS_PCT", default=[50, 80, 100], minimum=1)
RECLAIM_GRACE_S = env_int("RECLAIM_GRACE_S", default=30, minimum=1)
SITE_URL = env_str("SITE_URL", default="http://localhost:8000")
WEBHOOK_TIMEOUT_S = env_float("WEBHOOK_TIMEOUT_S", default=5.0, minimum=0.1)
# Webhooks reach only public addresses (monitoring/notify/transports/webhook/targets.py); these networks are
# allowed besides, for an internal receiver, e.g. "10.20.0.0/16,192.168.5.7/32".
WEBHOOK_ALLOWED_NETWORKS = env_networks("WEBHOOK_ALLOWED_NETWORKS", default=[])
NOTIFY_MAX_RETRIES = env_int("NOTIFY_MAX_RETRIES", default=5, minimum=0)
NOTIFY_RETRY_BASE_S = env_float("NOTIFY_RETRY_BASE_S", default=30.0, minimum=0.0)
# Daily digests go out at this hour of each person's own time zone; held messages are looked for every
# NOTIFY_HELD_CHECK_S seconds (monitoring/notify/held.py).
NOTIFY_DIGEST_HOUR = int(env_choice("NOTIFY_DIGEST_HOUR", default="8", choices=tuple(str(h) for h in range(24))))
NOTIFY_HELD_CHECK_S = env_float("NOTIFY_HELD_CHECK_S", default=60.0, minimum=1.0)
# Alerts of one run and rule that change the same way within this many seconds of the first are told as
# one notification per person and channel, whose email or webhook message waits for the window to close
# (monitoring/notify/grouping.py); 0 groups only the alerts of one evaluation.
NOTIFY_GROUP_WINDOW_S = env_float("NOTIFY_GROUP_WINDOW_S", default=300.0, minimum=0.0)

CELERY_BEAT_SCHEDULE |= {
    "alerts-evaluate": {
        "task": "monitoring.tasks.evaluate_alerts",
        "schedule": ALERT_EVAL_INTERVAL_S,
        "options": {"expires": ALERT_EVAL_INTERVAL_S},  # a late evaluation is superseded by the next one
    },
    "costs-rollup-usage": {"task": "monitoring.tasks.rollup_usage", "schedule": 60.0},
    "notify-send-held": {
        "task": "monitoring.tasks.send_held_notifications",
        "schedule": NOTIFY_HELD_CHECK_S,
        "options": {"expires": NOTIFY_HELD_CHECK_S},
    },
}

# Training runs (docs/runs.md).
RUN_SCRIPT_DIRS = env_list("RUN_SCRIPT_DIRS", default=[])
RUN_HEARTBEAT_S = env_float("RUN_HEARTBEAT_S", default=5.0, minimum=0.1)
RUN_MISSED_HEARTBEATS = env_int("RUN_MISSED_HEARTBEATS", default=3, minimum=1)
RUN_FLUSH_S = env_float("RUN_FLUSH_S", default=0.5, minimum=0.05)
RUN_CANCEL_GRACE_S = env_float("RUN_CANCEL_GRACE_S", default=10.0, minimum=0.0)
RUN_QUEUE_RETRY_S = env_float("RUN_QUEUE_RETRY_S", default=2.0, minimum=0.1)
RUN_RENDEZVOUS_HOST = env_str("RUN_RENDEZVOUS_HOST", default=socket.gethostname())
RUN_RENDEZVOUS_TIMEOUT_S = env_float("RUN_RENDEZVOUS_TIMEOUT_S", default=300.0, minimum=1.0)
RUN_LOG_MAX_LINES = env_int("RUN_LOG_MAX_LINES", default=20000, minimum=100)
# A burn-in on a GPU passes when its GFLOP/s reach this share of the model's FP32 datasheet figure.
BURNIN_MIN_PERCENT_OF_PEAK = env_percent("BURNIN_MIN_PERCENT_OF_PEAK", default=60.0)
RUN_BOOKING_HORIZON_S = env_float("RUN_BOOKING_HORIZON_S", default=3600.0, minimum=60.0)
RUN_SWEEP_MAX_RUNS = env_int("RUN_SWEEP_MAX_RUNS", default=64, minimum=1)
# "Free" (reservations/availability.py): a GPU is not free while a process of someone else holds more memory.
FREE_GPU_FOREIGN_MEMORY_MIB = env_int("FREE_GPU_FOREIGN_MEMORY_MIB", default=1024, minimum=0)
# A root node worker runs a run's processes as its owner's linked OS account; otherwise: "worker" (its
# own account) or "refuse" (the run fails before anything starts). training/node/run_as.py.
RUN_ACCOUNT_FALLBACK = env_choice("RUN_ACCOUNT_FALLBACK", default="worker", choices=("worker", "refuse"))
# The interpreter a run's processes start with: the node worker's own unless the runs have another
# (one the researchers' accounts can execute, where runs execute as them).
RUN_PYTHON = env_str("RUN_PYTHON", default=sys.executable)
# Roots under which a run may use a venv or conda env by path (resolved after symlinks); empty turns them off.
RUN_ENV_DIRS = env_list("RUN_ENV_DIRS", default=[])
RUN_OUTPUT_DIR = Path(env_str("RUN_OUTPUT_DIR", default=str(BASE_DIR / "var" / "runs")))
# The largest trace or pstats file of one profiled rank the node worker stores (training/profiling/results.py).
RUN_PROFILE_MAX_BYTES = env_int("RUN_PROFILE_MAX_BYTES", default=64_000_000, minimum=1000)
# Where a run's artifacts (final model, metrics CSV) are kept for download; shared by node workers and web servers.
RUN_ARTIFACT_DIR = Path(env_str("RUN_ARTIFACT_DIR", default=str(BASE_DIR / "var" / "artifacts")))
# A finished run's files (checkpoints, artifacts, profiler files) are deleted this many days after its end
# by one hourly task (training/run_files/retention.py); 0 keeps them. RUN_CHECKPOINT_RETENTION_DAYS is its old name
# for checkpoints, still read with a warning.
RUN_FILES_RETENTION_DAYS = env_float(
    renamed(
        "RUN_FILES_RETENTION_DAYS",
        old="RUN_CHECKPOINT_RETENTION_DAYS",
        zero_error="0 deleted checkpoints as soon as their run ended, but for RUN_FILES_RETENTION_DAYS, which "
        "replaces it, 0 keeps a run's files for ever: set RUN_FILES_RETENTION_DAYS to the days to keep them",
    ),
    default=30.0,
    minimum=0.0,
)
# A run page warns when the run's GPUs were busy less than RUN_BUSY_WARN_PCT of the time, over at least
# RUN_BUSY_MIN_SAMPLES telemetry samples (training/web/efficiency.py).
RUN_BUSY_WARN_PCT = env_percent("RUN_BUSY_WARN_PCT", default=50.0)
RUN_BUSY_MIN_SAMPLES = env_int("RUN_BUSY_MIN_SAMPLES", default=30, minimum=1)
CELERY_BEAT_SCHEDULE["training-delete-expired-run-files"] = {
    "task": "training.tasks.delete_expired_run_files",
    "schedule": 3600.0,
    "options": {"queue": "default", "expires": 3600.0},
}

# A run no node worker took for RUN_QUEUE_TIMEOUT_S is sent again once, or failed with a reason
# (training/dispatch/reconcile.py); the reconciler looks every RUN_RECONCILE_S.
RUN_QUEUE_TIMEOUT_S = env_float("RUN_QUEUE_TIMEOUT_S", default=300.0, minimum=1.0)
RUN_RECONCILE_S = env_float("RUN_RECONCILE_S", default=30.0, minimum=0.5)
CELERY_BEAT_SCHEDULE["training-reconcile-queued-runs"] = {
    "task": "training.tasks.reconcile_queued_runs",
    "schedule": RUN_RECONCILE_S,
    "options": {"queue": "default", "expires": RUN_RECONCILE_S},
}
# Scheduled runs (training/launching/scheduled.py) start within RUN_SCHEDULE_CHECK_S of their booking's start.
RUN_SCHEDULE_CHECK_S = env_float("RUN_SCHEDULE_CHECK_S", default=10.0, minimum=0.5)
CELERY_BEAT_SCHEDULE["training-start-scheduled-runs"] = {
    "task": "training.tasks.start_scheduled_runs",
    "schedule": RUN_SCHEDULE_CHECK_S,
    "options": {"queue": "default", "expires": RUN_SCHEDULE_CHECK_S},
}
# A sweep's waiting runs are placed on GPUs as they come free (training/sweeps/placing.py).
RUN_SWEEP_DISPATCH_S = env_float("RUN_SWEEP_DISPATCH_S", default=5.0, minimum=0.5)
CELERY_BEAT_SCHEDULE["training-dispatch-sweeps"] = {
    "task": "training.tasks.dispatch_sweeps",
    "schedule": RUN_SWEEP_DISPATCH_S,
    "options": {"queue": "default", "expires": RUN_SWEEP_DISPATCH_S},
}
# Checkpoints (docs/runs.md, Checkpoints and resume): built-in workloads save every N steps or M seconds,
# whichever comes first (0 turns a rule off), and when told to stop; each run's under RUN_CHECKPOINT_DIR.
# The directory must be one the web server and every node worker see (shared storage, or one machine).
# They are deleted with the run's other files (RUN_FILES_RETENTION_DAYS).
RUN_CHECKPOINT_DIR = Path(env_str("RUN_CHECKPOINT_DIR", default=str(BASE_DIR / "var" / "checkpoints")))
RUN_CHECKPOINT_EVERY_STEPS = env_int("RUN_CHECKPOINT_EVERY_STEPS", default=1000, minimum=0)
RUN_CHECKPOINT_EVERY_S = env_float("RUN_CHECKPOINT_EVERY_S", default=600.0, minimum=0.0)
CELERY_BEAT_SCHEDULE["training-mark-lost-runs"] = {
    "task": "training.tasks.mark_lost_runs",
    "schedule": RUN_HEARTBEAT_S,
    "options": {"queue": "default", "expires": RUN_HEARTBEAT_S},
}
# Container images (docs/runs.md, Containers; training/environments/container.py).
# The runtime a node worker runs images with: "podman" or "docker".
RUN_CONTAINER_RUNTIME = env_choice("RUN_CONTAINER_RUNTIME", default="podman", choices=("podman", "docker"))
# The images runs may use: exact names ("ghcr.io/lab/train" admits its every tag, "ghcr.io/lab/train:v2" that
# tag alone) or prefixes ending in "/" (a registry or a namespace). Empty: container runs are off.
RUN_CONTAINER_IMAGES = env_list("RUN_CONTAINER_IMAGES", default=[])
# Data paths on the nodes that every container run gets, bind-mounted at the same path.
RUN_CONTAINER_MOUNTS = env_path_list("RUN_CONTAINER_MOUNTS", default=[])
# Pass the run's GPUs into its container (podman through CDI, docker through --gpus); off on nodes without GPUs.
RUN_CONTAINER_GPUS = env_bool("RUN_CONTAINER_GPUS", default=True)

# Reservations (docs/reservations.md).
RESERVATION_NO_SHOW_MINUTES = env_int("RESERVATION_NO_SHOW_MINUTES", default=30, minimum=1)
RESERVATION_TELEMETRY_STALE_S = env_int("RESERVATION_TELEMETRY_STALE_S", default=120, minimum=1)

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s: %(message)s"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "plain"}},
    "root": {"handlers": ["console"], "level": env_str("LOG_LEVEL", default="INFO")},
    "loggers": {"django.channels.server": {"level": "WARNING"}},
}
