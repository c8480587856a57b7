from django.apps import AppConfig


class NewsroomConfig(AppConfig):
    name = "newsroom"
    verbose_name = "Newsroom"
