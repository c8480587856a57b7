from django.apps import AppConfig


class SessionsAppConfig(AppConfig):
    name = "sessions_app"
    verbose_name = "Browser sessions"

    def ready(self) -> None:
        from newsroom.runs.kinds import register_renderer
        from sessions_app.render import render

        register_renderer("browser", render)
