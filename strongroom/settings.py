"""Strongroom's one settings module: every value comes from the environment (see README)."""

from __future__ import annotations

from pathlib import Path

from django.core.exceptions import ImproperlyConfigured
from django.utils.translation import gettext_lazy as _

from strongroom.conf import (
    DEFAULT_BIND,
    env_bool,
    env_choice,
    env_date,
    env_email_from,
    env_email_url,
    env_int,
    env_list,
    env_redis_url,
    env_str,
    env_timezone,
    env_url,
    site_url_for_bind,
)

BASE_DIR = Path(__file__).resolve().parent.parent

DEBUG = env_bool("DEBUG", False)
SECRET_KEY = env_str("SECRET_KEY", "")
if not SECRET_KEY:
    if not DEBUG:
        raise ImproperlyConfigured("SECRET_KEY must be set when DEBUG is off (or set DEBUG=1).")
    SECRET_KEY = "strongroom-development-only-key-do-not-use-in-production"  # noqa: S105
ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", ["127.0.0.1", "localhost", "[::1]"])
CSRF_TRUSTED_ORIGINS = env_list("CSRF_TRUSTED_ORIGINS", [])

# --- The store -----------------------------------------------------------------------------
# REDIS_URL points at any Redis 7+ or Valkey, or (redis+cluster://host:port,host:port...) at a
# Redis / Valkey Cluster; unset, an embedded Valkey runs under DATA_DIR.
REDIS_URL = env_redis_url("REDIS_URL")
STRONGROOM_DATA_DIR = Path(env_str("STRONGROOM_DATA_DIR", str(BASE_DIR / "var"))).resolve()
STRONGROOM_KEY_PREFIX = env_str("STRONGROOM_KEY_PREFIX", "sr")
if not STRONGROOM_KEY_PREFIX.isalnum():
    raise ImproperlyConfigured("STRONGROOM_KEY_PREFIX must be letters and digits only.")
# When a booking counts as confirmed. "aof": WAITAOF says it is on the primary's disk;
# "aof+replica": and on a replica's (survives losing the primary); "none": the server's own
# fsync. Unset: "aof+replica" on a cluster with replicas, else "aof" (strongroom.durable).
STRONGROOM_DURABILITY = env_choice("STRONGROOM_DURABILITY", "", ("", "aof", "aof+replica", "none"))
# On a cluster with replicas: catalog pages read books from replicas too (an edit shows late).
STRONGROOM_CATALOG_REPLICA_READS = env_bool("STRONGROOM_CATALOG_REPLICA_READS", False)
# The embedded server's fsync policy: "always" answers a write only once it is on disk.
STRONGROOM_EMBEDDED_APPENDFSYNC = env_choice(
    "STRONGROOM_EMBEDDED_APPENDFSYNC", "always", ("always", "everysec")
)

# Demo data (staff with a printed password, buyers, bookings, books): "auto" on the first run
# of an empty embedded store only, "1" of any empty store, "0" never; never loaded again.
STRONGROOM_DEMO = env_choice("STRONGROOM_DEMO", "auto", ("auto", "1", "0"))

# --- The domain ------------------------------------------------------------------------------
TIME_ZONE = env_timezone("TIME_ZONE", "Asia/Shanghai")
# The sales window's first value (staff change it on the dashboard, the store keeps it): by
# default rolling, from tomorrow to STRONGROOM_SELL_DAYS days ahead; fixed days when both
# STRONGROOM_SEASON_START and STRONGROOM_SEASON_END are set.
STRONGROOM_SELL_DAYS = env_int("STRONGROOM_SELL_DAYS", 31, minimum=1, maximum=366)
STRONGROOM_SEASON_START = env_date("STRONGROOM_SEASON_START", None)
STRONGROOM_SEASON_END = env_date("STRONGROOM_SEASON_END", None)
if (STRONGROOM_SEASON_START is None) != (STRONGROOM_SEASON_END is None):
    raise ImproperlyConfigured(
        "Set both STRONGROOM_SEASON_START and STRONGROOM_SEASON_END (a fixed window) or neither."
    )
if STRONGROOM_SEASON_START and STRONGROOM_SEASON_END:
    if STRONGROOM_SEASON_END < STRONGROOM_SEASON_START:
        raise ImproperlyConfigured("STRONGROOM_SEASON_END is before STRONGROOM_SEASON_START.")
    if (STRONGROOM_SEASON_END - STRONGROOM_SEASON_START).days > 365:
        raise ImproperlyConfigured("A season is at most 366 days (STRONGROOM_SEASON_START/END).")
# Days a booking record (with its code and index entries), the audit entries and the rooms'
# statistics are kept after their day before compaction drops them (booking.engine.compaction);
# a past month's inventory bitmaps go as soon as its pickups are over.
STRONGROOM_RETENTION_DAYS = env_int("STRONGROOM_RETENTION_DAYS", 400, minimum=1, maximum=36500)
STRONGROOM_ROOM_COUNT = env_int("STRONGROOM_ROOM_COUNT", 300, minimum=1, maximum=999)
# Seconds: a process keeps the stored sales window (1st); an open page polls that often (2nd).
STRONGROOM_WINDOW_REFRESH_SECONDS = env_int(
    "STRONGROOM_WINDOW_REFRESH_SECONDS", 5, minimum=0, maximum=3600
)
STRONGROOM_POLL_SECONDS = env_int("STRONGROOM_POLL_SECONDS", 5, minimum=1, maximum=600)

# --- booking -------------------------------------------------------------------------------
# Pickup: the grace after a booking's last hour, and how wrong codes are slowed (never locked:
# the right code always opens). A client's wrong codes are remembered for the window; after the
# free ones (per room, and in all rooms together) each asks it to wait 1, 2, 4... seconds, at
# most the ceiling.
STRONGROOM_PICKUP_GRACE_MINUTES = env_int(
    "STRONGROOM_PICKUP_GRACE_MINUTES", 15, minimum=0, maximum=180
)
STRONGROOM_PICKUP_WINDOW_SECONDS = env_int(
    "STRONGROOM_PICKUP_WINDOW_SECONDS", 600, minimum=1, maximum=86400
)
STRONGROOM_PICKUP_FREE_MISSES = env_int("STRONGROOM_PICKUP_FREE_MISSES", 3, minimum=0, maximum=100)
STRONGROOM_PICKUP_CLIENT_FREE_MISSES = env_int(
    "STRONGROOM_PICKUP_CLIENT_FREE_MISSES", 10, minimum=0, maximum=1000
)
STRONGROOM_PICKUP_DELAY_CEILING_SECONDS = env_int(
    "STRONGROOM_PICKUP_DELAY_CEILING_SECONDS", 60, minimum=1, maximum=3600
)
# A hold keeps slots for one buyer while they finish the form (seconds).
STRONGROOM_HOLD_SECONDS = env_int("STRONGROOM_HOLD_SECONDS", 600, minimum=5, maximum=3600)
# The most slots one hold or booking may take: a class C room for a day (100 boxes x 24 hours),
# a class B room's season, any class A choice; no request holds a room's season hostage.
STRONGROOM_MAX_SLOTS = env_int("STRONGROOM_MAX_SLOTS", 2400, minimum=1, maximum=100_000)
# Audit entries kept per room (capped stream, approximate trimming).
STRONGROOM_AUDIT_MAXLEN = env_int("STRONGROOM_AUDIT_MAXLEN", 1000, minimum=10, maximum=1_000_000)

# --- Django ----------------------------------------------------------------------------------
INSTALLED_APPS = [
    "django.contrib.messages",
    "strongroom.static_files.StaticFiles",  # django.contrib.staticfiles, fewer files
    "django_htmx",
    "strongroom",
    "accounts",
    "booking",
    "catalog",
    "dashboard",
]

MIDDLEWARE = [
    "strongroom.middleware.HeadWithoutBodyMiddleware",
    "strongroom.middleware.StoreGuardMiddleware",
    # Outside every middleware that writes a body: it compresses the finished answer, and only
    # the answers of views marked @compressible (strongroom/compression.py).
    "strongroom.compression.CompressionMiddleware",
    "django.middleware.security.SecurityMiddleware",
    "strongroom.middleware.ContentSecurityPolicyMiddleware",
    # Outside every middleware that may replace a response (the 405 page below).
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "strongroom.headers.PermissionsPolicyMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "strongroom.headers.PrivatePagesMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "accounts.middleware.PersonMiddleware",
    "accounts.middleware.VisitMiddleware",
    "booking.web.window.SalesWindowMiddleware",
    "django.middleware.locale.LocaleMiddleware",
    "strongroom.middleware.MethodNotAllowedPageMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
    # Last: a view's planned reads go with the session's read, once nothing stops the request.
    "strongroom.ahead.ReadAheadMiddleware",
]

ROOT_URLCONF = "strongroom.urls"
WSGI_APPLICATION = "strongroom.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.template.context_processors.i18n",
                "django.contrib.messages.context_processors.messages",
                "strongroom.context_processors.site",
                "booking.web.window.season",
                "booking.web.banner.priority_banner",
            ],
        },
    },
]

# No SQL database: every bit of state lives in the store.
DATABASES: dict[str, dict[str, str]] = {}

# Sessions live in the store through our own backend on the shared connection (see
# strongroom/sessions.py): one pool, one key family, no pickling; accounts' subclass reads the
# signed-in person with the session, in one round trip.
SESSION_ENGINE = "accounts.sessions"
# The language cookie (the switch in the header) gets the session cookie's flags too.
SESSION_COOKIE_HTTPONLY = LANGUAGE_COOKIE_HTTPONLY = True
SESSION_COOKIE_SAMESITE = LANGUAGE_COOKIE_SAMESITE = "Lax"
SESSION_COOKIE_SECURE = not DEBUG and env_bool("SECURE_COOKIES", True)
CSRF_COOKIE_SECURE = LANGUAGE_COOKIE_SECURE = SESSION_COOKIE_SECURE
CSRF_COOKIE_HTTPONLY = True
SESSION_COOKIE_AGE = 14 * 24 * 3600
# One-time messages ("You have logged out.") travel in a signed cookie, the session only when
# they outgrow it: showing one writes nothing to the store, and a visitor who is not signed in
# gets no session for it (an invalid link or a logout must not create store keys).
MESSAGE_STORAGE = "django.contrib.messages.storage.fallback.FallbackStorage"

# Nothing in the site caches: every value is state and lives in the store. A dummy cache keeps
# Django's cache API from opening a second connection (one that would not know the cluster).
CACHES = {"default": {"BACKEND": "django.core.cache.backends.dummy.DummyCache"}}

LANGUAGE_CODE = "en"
LANGUAGES = [("en", _("English")), ("zh-hans", _("Simplified Chinese"))]
USE_I18N = True
USE_TZ = True

STATIC_URL = "/static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
# Collected static files: under the data directory, or a directory of their own (several sites
# of one version may share it; strongroom/static_files.py collects again only when they changed).
STATIC_ROOT = Path(env_str("STRONGROOM_STATIC_DIR", str(STRONGROOM_DATA_DIR / "static"))).resolve()
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {
        "BACKEND": (
            "django.contrib.staticfiles.storage.StaticFilesStorage"
            if DEBUG
            else "whitenoise.storage.CompressedManifestStaticFilesStorage"
        )
    },
}
WHITENOISE_USE_FINDERS = DEBUG

SECURE_CONTENT_TYPE_NOSNIFF = True
SECURE_REFERRER_POLICY = "same-origin"
X_FRAME_OPTIONS = "DENY"
SECURE_PROXY_SSL_HEADER = (
    ("HTTP_X_FORWARDED_PROTO", "https") if env_bool("BEHIND_PROXY", False) else None
)
SECURE_HSTS_SECONDS = env_int(
    "SECURE_HSTS_SECONDS", 0 if DEBUG else 31536000, minimum=0, maximum=2 * 365 * 86400
)

# --- mail ----------------------------------------------------------------------------------
# EMAIL_URL (smtp:// or smtps://) sends through an SMTP server; unset, each message is a file
# under DATA_DIR/mail (make run works offline); the outbox keeps them until sent.
EMAIL_SERVER = env_email_url("EMAIL_URL")
EMAIL_USE_LOCALTIME = True  # Date: +0800 (the site's clock); UTC as "-0000" says "zone unknown"
STRONGROOM_MAIL_DIR = STRONGROOM_DATA_DIR / "mail"
if EMAIL_SERVER is None:
    EMAIL_BACKEND = "strongroom.mail.FilePerMessageBackend"
else:
    EMAIL_BACKEND = "django.core.mail.backends.smtp.EmailBackend"
    EMAIL_HOST = EMAIL_SERVER.host
    EMAIL_PORT = EMAIL_SERVER.port
    EMAIL_HOST_USER = EMAIL_SERVER.username
    EMAIL_HOST_PASSWORD = EMAIL_SERVER.password
    EMAIL_USE_SSL = EMAIL_SERVER.use_ssl
    EMAIL_USE_TLS = EMAIL_SERVER.use_tls
EMAIL_TIMEOUT = 10
DEFAULT_FROM_EMAIL = (EMAIL_SERVER and EMAIL_SERVER.sender) or env_email_from(
    "EMAIL_FROM", "Strongroom <strongroom@localhost>"
)
# Links in mail point here (mail is sent outside any request); unset, where `make run` binds.
STRONGROOM_SITE_URL = env_url(
    "STRONGROOM_SITE_URL", site_url_for_bind(env_str("BIND", DEFAULT_BIND))
)
# Every web process sends mail from a background thread (a consumer of the outboxes' group; see
# strongroom/outbox_sender.py); 0 leaves it to `manage.py sendmail`.
STRONGROOM_MAIL_SENDER = env_bool("STRONGROOM_MAIL_SENDER", True)
# ... and runs the keeper (strongroom/keeper.py); 0 leaves it to the others (one must run it).
STRONGROOM_KEEPER = env_bool("STRONGROOM_KEEPER", True)
# A password-reset link works once, for this long.
PASSWORD_RESET_TIMEOUT = 60 * env_int("PASSWORD_RESET_MINUTES", 60, minimum=5, maximum=7 * 24 * 60)
# Waiting list: the first waiter's priority hold on a freed slot (seconds): long enough for a
# buyer who reads the mail later to act on it; waits per buyer.
STRONGROOM_WAIT_HOLD_SECONDS = env_int(
    "STRONGROOM_WAIT_HOLD_SECONDS", 3600, minimum=30, maximum=24 * 3600
)
STRONGROOM_WAITS_PER_BUYER = env_int("STRONGROOM_WAITS_PER_BUYER", 5, minimum=1, maximum=50)
# Priority holds one buyer keeps at once, besides their one normal hold: a buyer waiting for many
# slots cannot hold them all when they free together (one more opens to everyone at once).
STRONGROOM_PRIORITY_HOLDS_PER_BUYER = env_int(
    "STRONGROOM_PRIORITY_HOLDS_PER_BUYER", 1, minimum=1, maximum=10
)
# New bookings one buyer may make in an hour (a retry of the same booking counts once): one
# account cannot sweep the building's free slots in a few seconds.
STRONGROOM_BOOKINGS_PER_HOUR = env_int(
    "STRONGROOM_BOOKINGS_PER_HOUR", 20, minimum=1, maximum=100_000
)

# --- bench ---------------------------------------------------------------------------------
# `make bench` serves two reference views under /bench/ (Django's floor); never in production.
STRONGROOM_BENCH_VIEWS = env_bool("STRONGROOM_BENCH_VIEWS", False)
if STRONGROOM_BENCH_VIEWS:  # the site's URLs plus /bench/ (bench/root_urls.py)
    ROOT_URLCONF = "bench.root_urls"

# --- accounts ------------------------------------------------------------------------------
# No django.contrib.auth models: people live in the store; Django's hashers and validators
# are used directly (accounts/services.py).
_VALIDATION = "django.contrib.auth.password_validation."
AUTH_PASSWORD_VALIDATORS = [
    {"NAME": _VALIDATION + "UserAttributeSimilarityValidator",
     "OPTIONS": {"user_attributes": ("username",)}},
    {"NAME": _VALIDATION + "MinimumLengthValidator", "OPTIONS": {"min_length": 10}},
    {"NAME": _VALIDATION + "CommonPasswordValidator"},
    {"NAME": _VALIDATION + "NumericPasswordValidator"},
    {"NAME": "accounts.passwords.NotBlankValidator"},
]  # fmt: skip
LOGIN_URL = "accounts:login"
# The recent-logins list keeps the newest N logins.
STRONGROOM_RECENT_LOGINS = env_int("STRONGROOM_RECENT_LOGINS", 100, minimum=1, maximum=100_000)
# Login throttle: LIMIT failures within WINDOW minutes lock a (username, client) pair for LOCK.
STRONGROOM_LOGIN_FAILURE_LIMIT = env_int(
    "STRONGROOM_LOGIN_FAILURE_LIMIT", 5, minimum=1, maximum=100
)
STRONGROOM_LOGIN_FAILURE_WINDOW_MINUTES = env_int(
    "STRONGROOM_LOGIN_FAILURE_WINDOW_MINUTES", 15, minimum=1, maximum=24 * 60
)
STRONGROOM_LOGIN_LOCK_MINUTES = env_int(
    "STRONGROOM_LOGIN_LOCK_MINUTES", 15, minimum=1, maximum=24 * 60
)
# Across names, CLIENT_LIMIT failures from one client within the window lock that client for
# LOCK minutes. Across clients, once a name has NAME_LIMIT failures within the window, the other
# (name, client) pairs may try it once per SLOWDOWN seconds between them. A pair that logged in
# within TRUST_DAYS skips both: others' guesses do not keep a person out of their usual connection.
STRONGROOM_LOGIN_CLIENT_LIMIT = env_int(
    "STRONGROOM_LOGIN_CLIENT_LIMIT", 30, minimum=1, maximum=10_000
)
STRONGROOM_LOGIN_NAME_LIMIT = env_int("STRONGROOM_LOGIN_NAME_LIMIT", 10, minimum=1, maximum=10_000)
STRONGROOM_LOGIN_SLOWDOWN_SECONDS = env_int(
    "STRONGROOM_LOGIN_SLOWDOWN_SECONDS", 60, minimum=1, maximum=3600
)
STRONGROOM_LOGIN_TRUST_DAYS = env_int("STRONGROOM_LOGIN_TRUST_DAYS", 30, minimum=1, maximum=365)
# Sign-up: at most LIMIT new accounts from one client within WINDOW minutes.
STRONGROOM_SIGNUP_LIMIT = env_int("STRONGROOM_SIGNUP_LIMIT", 5, minimum=1, maximum=10_000)
STRONGROOM_SIGNUP_WINDOW_MINUTES = env_int(
    "STRONGROOM_SIGNUP_WINDOW_MINUTES", 60, minimum=1, maximum=7 * 24 * 60
)
# Behind the proxy (BEHIND_PROXY=1) every request comes from the proxy's address: the client's
# own is the last X-Forwarded-For entry, the one the proxy appended (earlier ones are the
# client's claims). Used for the login throttle and anonymous visitors.
STRONGROOM_CLIENT_FROM_FORWARDED_FOR = env_bool("BEHIND_PROXY", False)
# Daily visit counters expire this many days after their day.
STRONGROOM_VISITS_KEEP_DAYS = env_int("STRONGROOM_VISITS_KEEP_DAYS", 90, minimum=1, maximum=3660)
# Page views are counted in each worker's memory and written at most this often, in one pipeline
# off the request path (a crash loses at most this much of the counts). 0: only on demand
# (`accounts.visits.visits_flush()`), which the in-process tests use.
STRONGROOM_VISITS_FLUSH_MS = env_int("STRONGROOM_VISITS_FLUSH_MS", 1000, minimum=0, maximum=60_000)
# The staff overview sums every room's counters: each worker keeps the result this long and
# shows its age on the page (0: read on every request, which the in-process tests use).
STRONGROOM_OVERVIEW_CACHE_MS = env_int(
    "STRONGROOM_OVERVIEW_CACHE_MS", 2000, minimum=0, maximum=60_000
)
# The building map: each worker keeps a map it read this long and gives it to every buyer who
# holds nothing on it (0: read on every request, which the in-process tests use).
STRONGROOM_MAP_CACHE_MS = env_int("STRONGROOM_MAP_CACHE_MS", 1000, minimum=0, maximum=10_000)

_QUIET_REFUSALS = ("DisallowedHost", "RequestDataTooBig", "TooManyFieldsSent", "TooManyFilesSent")
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    # Every record leaves through a handler that redacts the secrets some links carry (a
    # calendar subscription's, reset and verification tokens: strongroom/redact.py).
    "filters": {
        "redact": {"()": "strongroom.redact.RedactingFilter"},
        "expected": {"()": "strongroom.redact.ExpectedAnswersFilter"},
    },
    "handlers": {
        "console": {"class": "logging.StreamHandler", "filters": ["redact"]},
        "null": {"class": "logging.NullHandler"},
    },
    "root": {"handlers": ["console"], "level": env_str("LOG_LEVEL", "WARNING")},
    # A request for a host not in ALLOWED_HOSTS, a body over DATA_UPLOAD_MAX_MEMORY_SIZE or
    # more fields than DATA_UPLOAD_MAX_NUMBER_FIELDS gets its 400; anyone can send one, so it
    # is not worth a traceback in the log each time. (A logger with no handler at all would
    # fall back to Python's last-resort handler and print it anyway.)
    "loggers": {
        **{
            f"django.security.{name}": {"handlers": ["null"], "propagate": False}
            for name in _QUIET_REFUSALS
        },
        "django.request": {"filters": ["expected"]},  # no line for each race lost (409)
        # runserver's request lines (DEBUG=1) go through the same handler.
        "django.server": {"handlers": ["console"], "level": "INFO", "propagate": False},
    },
}

# --- catalog -------------------------------------------------------------------------------
# Books per result page. Facets: at most CATALOG_FACET_TAGS of the most used tags (plus the
# query's own), as many as an estimated CATALOG_FACET_BUDGET set-membership checks allow
# (a small result gets them all); counts above CATALOG_FACET_LIMIT show as "limit+"
# (SINTERCARD LIMIT keeps big results cheap). The page lists the CATALOG_FACETS_SHOWN biggest
# counts (plus the query's own tags) and links to all of them (`?facets=all`).
CATALOG_PAGE_SIZE = env_int("CATALOG_PAGE_SIZE", 20, minimum=1, maximum=100)
CATALOG_FACET_TAGS = env_int("CATALOG_FACET_TAGS", 150, minimum=1, maximum=10_000)
CATALOG_FACET_BUDGET = env_int("CATALOG_FACET_BUDGET", 100_000, minimum=0, maximum=10**9)
CATALOG_FACET_LIMIT = env_int("CATALOG_FACET_LIMIT", 1000, minimum=0, maximum=1_000_000)
CATALOG_FACETS_SHOWN = env_int("CATALOG_FACETS_SHOWN", 30, minimum=1, maximum=10_000)
# Result pages a worker keeps while the catalog is unchanged (catalog.selectors.KeptPages); 0
# computes every page afresh.
CATALOG_PAGES_KEPT = env_int("CATALOG_PAGES_KEPT", 256, minimum=0, maximum=100_000)
CATALOG_MAX_QUERY_TAGS = env_int("CATALOG_MAX_QUERY_TAGS", 20, minimum=1, maximum=100)

# --- dashboard -----------------------------------------------------------------------------
# At most this many bookings are read for the overview or one bookings filter (a notice says
# when the cap was reached); bookings per page of the staff list.
STRONGROOM_DASHBOARD_SCAN_LIMIT = env_int(
    "STRONGROOM_DASHBOARD_SCAN_LIMIT", 20_000, minimum=100, maximum=1_000_000
)
STRONGROOM_DASHBOARD_PAGE_SIZE = env_int(
    "STRONGROOM_DASHBOARD_PAGE_SIZE", 50, minimum=5, maximum=500
)
