from __future__ import annotations

from django import forms

from newsroom.runs.models import RunSchedule


class ScheduleForm(forms.ModelForm):
    class Meta:
        model = RunSchedule
        fields = ["run_at"]
        labels = {"run_at": "Daily run at"}
        help_texts = {"run_at": "Server time (HH:MM). Leave empty for no daily run."}
        widgets = {"run_at": forms.TimeInput(attrs={"type": "time"}, format="%H:%M")}
