from django.apps import AppConfig


class LiveConfig(AppConfig):
    name = "newsroom.live"
    label = "live"
    verbose_name = "Live pages"

    def ready(self) -> None:
        from newsroom.live import signals

        signals.connect()
