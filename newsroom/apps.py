from django.apps import AppConfig


class NewsroomConfig(AppConfig):
    name = "newsroom"
    verbose_name = "Newsroom"

    def ready(self) -> None:
        # Fold outcomes and briefing progress flow into run status (runs area).
        from newsroom.runs import receivers  # noqa: F401
