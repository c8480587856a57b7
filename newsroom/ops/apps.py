from django.apps import AppConfig


class OpsConfig(AppConfig):
    name = "newsroom.ops"
    label = "ops"
    verbose_name = "Operations"
