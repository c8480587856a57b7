from django.apps import AppConfig


class FoldAppConfig(AppConfig):
    name = "fold_app"
    verbose_name = "Deliveries and items"
