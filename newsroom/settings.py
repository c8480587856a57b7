"""Django settings. Every variable read from the environment is listed in README.md."""

from __future__ import annotations

from pathlib import Path

from newsroom.env import (
    SettingError,
    channel_layers,
    database_config,
    env_bool,
    env_float,
    env_int,
    env_list,
    env_str,
    secret_key,
)

BASE_DIR = Path(__file__).resolve().parent.parent
DATA_DIR = Path(env_str("NEWSROOM_DATA_DIR", str(BASE_DIR / "data"))).resolve()

SECRET_KEY = secret_key(env_str("SECRET_KEY"), DATA_DIR / "secret_key")
DEBUG = env_bool("DEBUG", False)
ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", ["127.0.0.1", "localhost", "[::1]"])
CSRF_TRUSTED_ORIGINS = env_list("CSRF_TRUSTED_ORIGINS", [])

INSTALLED_APPS = [
    "daphne",
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "whitenoise.runserver_nostatic",
    "django.contrib.staticfiles",
    "channels",
    "django_htmx",
    "newsroom",
    "fold_app",
    "sessions_app",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "newsroom.middleware.ContentSecurityPolicyMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.auth.middleware.LoginRequiredMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
]

ROOT_URLCONF = "newsroom.urls"
ASGI_APPLICATION = "newsroom.asgi.application"

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
            ],
        },
    }
]

DATABASES = {"default": database_config(env_str("DATABASE_URL"), DATA_DIR)}
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

REDIS_URL = env_str("REDIS_URL")
CHANNEL_LAYERS = channel_layers(REDIS_URL)

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]
LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "dashboard"
LOGOUT_REDIRECT_URL = "login"

LANGUAGE_CODE = "en-us"
TIME_ZONE = env_str("TIME_ZONE", "UTC")
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
# No STATIC_ROOT: WhiteNoise serves straight from the apps' static folders.
WHITENOISE_USE_FINDERS = True
WHITENOISE_AUTOREFRESH = DEBUG

SESSION_COOKIE_HTTPONLY = True
SESSION_COOKIE_SAMESITE = "Lax"
SESSION_COOKIE_SECURE = env_bool("SECURE_COOKIES", False)
CSRF_COOKIE_SECURE = SESSION_COOKIE_SECURE
X_FRAME_OPTIONS = "DENY"
SECURE_CONTENT_TYPE_NOSNIFF = True
SECURE_REFERRER_POLICY = "same-origin"
FILE_UPLOAD_MAX_MEMORY_SIZE = 5 * 1024 * 1024
DATA_UPLOAD_MAX_MEMORY_SIZE = 5 * 1024 * 1024

# Newsroom's own settings.
NEWSROOM_ALLOW_PRIVATE_NETWORKS = env_bool("NEWSROOM_ALLOW_PRIVATE_NETWORKS", False)
NEWSROOM_HOST = env_str("NEWSROOM_HOST", "127.0.0.1")
NEWSROOM_PORT = env_int("NEWSROOM_PORT", 8000, minimum=1, maximum=65535)
NEWSROOM_FETCH_TIMEOUT = env_float("NEWSROOM_FETCH_TIMEOUT", 30.0, minimum=1.0)
NEWSROOM_FETCH_MAX_BYTES = env_int("NEWSROOM_FETCH_MAX_BYTES", 15 * 1024 * 1024, minimum=1024)
NEWSROOM_USER_AGENT = "Newsroom/0.1 (+self-hosted news workbench)"

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s: %(message)s"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "plain"}},
    "root": {"handlers": ["console"], "level": env_str("LOG_LEVEL", "INFO").upper()},
    "loggers": {
        "django.channels.server": {"level": "WARNING"},
        "daphne": {"level": "WARNING"},
    },
}

# Background roles `manage.py serve` runs in-process (see newsroom/services.py).
NEWSROOM_SERVICES: list[str] = []

# --- runs ---
# Fetch limits beside NEWSROOM_FETCH_TIMEOUT (total) and NEWSROOM_FETCH_MAX_BYTES above.
NEWSROOM_FETCH_CONNECT_TIMEOUT = env_float("NEWSROOM_FETCH_CONNECT_TIMEOUT", 10.0, minimum=0.1)
NEWSROOM_FETCH_READ_TIMEOUT = env_float("NEWSROOM_FETCH_READ_TIMEOUT", 20.0, minimum=0.1)
# 32 connections is the measured sweet spot on 2 cores (DESIGN.md); measure before raising.
NEWSROOM_RUN_CONCURRENCY = env_int("NEWSROOM_RUN_CONCURRENCY", 32, minimum=1, maximum=512)
NEWSROOM_RUN_PER_HOST = env_int("NEWSROOM_RUN_PER_HOST", 4, minimum=1, maximum=64)
# A failing source is retried after this, doubling per consecutive error, capped at a day.
NEWSROOM_SOURCE_RETRY_INTERVAL = env_int(
    "NEWSROOM_SOURCE_RETRY_INTERVAL", 1800, minimum=60, maximum=86400
)
# `serve` executes queued runs in-process unless NEWSROOM_RUN_WORKER=external
# (then `manage.py run_worker` processes do it).
NEWSROOM_RUN_WORKER = env_str("NEWSROOM_RUN_WORKER", "inprocess")
if NEWSROOM_RUN_WORKER not in ("inprocess", "external"):
    raise SettingError(
        f"NEWSROOM_RUN_WORKER={NEWSROOM_RUN_WORKER!r}: use inprocess or external"
    )
NEWSROOM_SERVICES += ["newsroom.runs.worker.service"]
# httpx logs every request at INFO: hundreds of lines per run.
LOGGING["loggers"]["httpx"] = {"level": "WARNING"}

# --- briefing ---
# An OpenAI-compatible chat endpoint (base URL, e.g. http://127.0.0.1:11434/v1).
# Empty: the built-in analyst writes every briefing. Operator-configured, so it
# may point at localhost; it is not a reader's source and not subject to the
# private-network rule for fetching.
NEWSROOM_LLM_URL = env_str("NEWSROOM_LLM_URL", "").rstrip("/")
NEWSROOM_LLM_MODEL = env_str("NEWSROOM_LLM_MODEL", "")
NEWSROOM_LLM_API_KEY = env_str("NEWSROOM_LLM_API_KEY", "")
NEWSROOM_LLM_TIMEOUT = env_float("NEWSROOM_LLM_TIMEOUT", 120.0, minimum=0.05)
NEWSROOM_EMBED_CACHE_DIR = env_str("NEWSROOM_EMBED_CACHE_DIR", str(DATA_DIR / "wordllama"))
# Cosine similarity at which two items are the same story.
NEWSROOM_BRIEFING_SAME_STORY = env_float("NEWSROOM_BRIEFING_SAME_STORY", 0.7, minimum=0.0)
if NEWSROOM_LLM_URL and not NEWSROOM_LLM_URL.startswith(("http://", "https://")):
    raise SettingError(f"NEWSROOM_LLM_URL={NEWSROOM_LLM_URL!r} must start with http:// or https://")
if NEWSROOM_LLM_URL and not NEWSROOM_LLM_MODEL:
    raise SettingError("NEWSROOM_LLM_URL is set but NEWSROOM_LLM_MODEL is empty: name the model")

# Write the day's briefing after each run, once the fold worker has folded the
# run's deliveries (waiting at most NEWSROOM_BRIEF_AFTER_RUN_WAIT seconds).
NEWSROOM_BRIEF_AFTER_RUN = env_bool("NEWSROOM_BRIEF_AFTER_RUN", True)
NEWSROOM_BRIEF_AFTER_RUN_WAIT = env_float("NEWSROOM_BRIEF_AFTER_RUN_WAIT", 120.0, minimum=0.0)

# --- live pages ---
INSTALLED_APPS += ["newsroom.live"]
# Streams render at most once per tick; writes in between land in one frame.
NEWSROOM_LIVE_TICK_MS = env_int("NEWSROOM_LIVE_TICK_MS", 200, minimum=10, maximum=5000)
# Component cache entries (two generations of half this size each).
NEWSROOM_LIVE_CACHE_SIZE = env_int("NEWSROOM_LIVE_CACHE_SIZE", 20_000, minimum=100)
# A run's burst of status changes lands on one hub channel per process: the
# in-memory layer's default of 100 queued messages would drop most of a burst
# (recoverable from the snapshot, but a second late). Redis keeps its own setting.
if CHANNEL_LAYERS["default"]["BACKEND"].endswith("InMemoryChannelLayer"):
    CHANNEL_LAYERS["default"].setdefault("CONFIG", {}).setdefault("capacity", 10_000)

# --- browser sessions ---
# Chromium: empty means the system one (/usr/bin/chromium), else Playwright's own.
NEWSROOM_BROWSER_PATH = env_str("NEWSROOM_BROWSER_PATH", "")
# CDP port on 127.0.0.1 for the shared browser; 0 lets Chromium pick a free one.
NEWSROOM_BROWSER_PORT = env_int("NEWSROOM_BROWSER_PORT", 0, minimum=0, maximum=65535)
NEWSROOM_BROWSER_MAX_TABS = env_int("NEWSROOM_BROWSER_MAX_TABS", 16, minimum=1)
NEWSROOM_BROWSER_RESERVE_MB = env_int("NEWSROOM_BROWSER_RESERVE_MB", 1024, minimum=0)
# Per kept page until the pool has measured one (a context plus a simple page).
NEWSROOM_BROWSER_TAB_MB = env_int("NEWSROOM_BROWSER_TAB_MB", 85, minimum=1)
NEWSROOM_BROWSER_TIMEOUT = env_float("NEWSROOM_BROWSER_TIMEOUT", 30.0, minimum=1.0)
NEWSROOM_SESSION_IDLE = env_float("NEWSROOM_SESSION_IDLE", 300.0, minimum=1.0)
NEWSROOM_SESSION_TTL = env_float("NEWSROOM_SESSION_TTL", 600.0, minimum=1.0)
# The reaper sweeps every NEWSROOM_SESSION_IDLE x this fraction.
NEWSROOM_SESSION_SWEEP_FRACTION = env_float("NEWSROOM_SESSION_SWEEP_FRACTION", 0.1, minimum=0.001)
NEWSROOM_SERVICES += ["sessions_app.reaper.service"]

# --- fold worker (fold_app) ---
# Run the fold worker inside `serve`; 0 when a separate `manage.py fold_worker` runs.
NEWSROOM_FOLD_IN_SERVE = env_bool("NEWSROOM_FOLD_IN_SERVE", True)
# `manage.py prune_deliveries` drops delivery bodies older than this.
NEWSROOM_DELIVERY_RETENTION_DAYS = env_int("NEWSROOM_DELIVERY_RETENTION_DAYS", 30, minimum=1)
NEWSROOM_SERVICES += ["fold_app.service.fold_service"]

# --- operations ---
INSTALLED_APPS += ["newsroom.ops"]
# Background roles `serve` runs beside daphne; the rest run as their own processes
# (`manage.py run_worker`, `fold_worker`, `reap_sessions`). "none" for a pure web
# process. Unset, the older switches NEWSROOM_RUN_WORKER=external and
# NEWSROOM_FOLD_IN_SERVE=0 still take their role out.
from newsroom.ops.roles import serve_roles  # noqa: E402

NEWSROOM_SERVE_ROLES = serve_roles(
    run_worker=NEWSROOM_RUN_WORKER,
    fold_in_serve=NEWSROOM_FOLD_IN_SERVE,
)
# Each area's factory reads its own switch: keep them in step with the list.
NEWSROOM_RUN_WORKER = "inprocess" if "runs" in NEWSROOM_SERVE_ROLES else "external"
NEWSROOM_FOLD_IN_SERVE = "fold" in NEWSROOM_SERVE_ROLES
NEWSROOM_REAPER_IN_SERVE = "reaper" in NEWSROOM_SERVE_ROLES
# Every long-running process beats this often; three missed beats are stale.
NEWSROOM_HEARTBEAT_INTERVAL = env_float("NEWSROOM_HEARTBEAT_INTERVAL", 15.0, minimum=0.1)
# Roles /healthz requires a fresh heartbeat from.
NEWSROOM_HEALTH_ROLES = env_list("NEWSROOM_HEALTH_ROLES", ["web", "runs", "fold", "reaper"])
if not set(NEWSROOM_HEALTH_ROLES) <= {"web", "runs", "fold", "reaper"}:
    raise SettingError(
        f"NEWSROOM_HEALTH_ROLES={','.join(NEWSROOM_HEALTH_ROLES)!r}: use any of "
        "web, runs, fold, reaper (comma-separated)"
    )
# Bearer token for /healthz and /metrics (scrapers, load balancers); empty: staff only.
NEWSROOM_OPS_TOKEN = env_str("NEWSROOM_OPS_TOKEN", "")
if NEWSROOM_OPS_TOKEN and len(NEWSROOM_OPS_TOKEN) < 16:
    raise SettingError("NEWSROOM_OPS_TOKEN is shorter than 16 characters")
