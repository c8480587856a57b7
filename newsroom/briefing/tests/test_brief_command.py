from __future__ import annotations

from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from newsroom.briefing.models import Briefing
from newsroom.briefing.tests.conftest import DAY

pytestmark = pytest.mark.django_db


def test_brief_writes_a_briefing_and_prints_progress(alice, news_day):
    out = StringIO()
    call_command("brief", "--reader", "alice", "--day", DAY.isoformat(), stdout=out)
    text = out.getvalue()
    assert "[gathering]" in text and "[grouping] Grouping 26 items" in text
    assert "[writing]" in text and "[stored]" in text
    assert "words" in text
    briefing = Briefing.objects.get(reader=alice)
    assert f"Briefing {briefing.pk} for {DAY}" in text


def test_brief_says_clearly_what_is_wrong(alice):
    with pytest.raises(CommandError, match="No reader named 'nobody'"):
        call_command("brief", "--reader", "nobody")
    with pytest.raises(CommandError, match="not a date"):
        call_command("brief", "--reader", "alice", "--day", "30/11/2026")
