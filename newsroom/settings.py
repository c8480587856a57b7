"""Django settings. Every variable read from the environment is listed in README.md."""

from __future__ import annotations

from pathlib import Path

from newsroom.env import (
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

# --- fold worker (fold_app) ---
# Run the fold worker inside `serve`; 0 when a separate `manage.py fold_worker` runs.
NEWSROOM_FOLD_IN_SERVE = env_bool("NEWSROOM_FOLD_IN_SERVE", True)
# `manage.py prune_deliveries` drops delivery bodies older than this.
NEWSROOM_DELIVERY_RETENTION_DAYS = env_int("NEWSROOM_DELIVERY_RETENTION_DAYS", 30, minimum=1)
NEWSROOM_SERVICES += ["fold_app.service.fold_service"]
