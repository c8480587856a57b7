"""OPML import and export for a reader: the service, the commands and the pages."""

from __future__ import annotations

import socket
from io import StringIO

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import CommandError, call_command
from django.urls import reverse

from newsroom.sources.models import Category, Source
from newsroom.sources.opml import OpmlError, parse_opml
from newsroom.sources.opml_io import (
    STARTER_OPML,
    export_opml,
    import_opml,
    import_starter,
)
from newsroom.tests.test_opml import NESTED

pytestmark = pytest.mark.django_db


def outlines(data: bytes):
    doc = parse_opml(data)
    return sorted(doc.feeds, key=repr), doc.categories


def test_import_then_export_gives_the_same_outlines(alice):
    result = import_opml(alice, NESTED)
    assert (result.added, result.duplicates, result.categories_created) == (4, 0, 3)
    assert outlines(export_opml(alice)) == outlines(NESTED)


def test_only_folders_that_hold_feeds_become_categories(alice):
    import_opml(alice, NESTED)
    # "News / Europe" holds Beta; "News" holds Alpha; "Pages" holds Gamma.
    assert set(
        Category.objects.filter(reader=alice).values_list("name", flat=True)
    ) == {"News", "News / Europe", "Pages"}
    gamma = Source.objects.get(reader=alice, url="https://gamma.example/news")
    assert (gamma.kind, gamma.link_pattern, gamma.category.name) == (
        "scrape",
        "/news/\\d+",
        "Pages",
    )


def test_duplicates_are_skipped_and_counted(alice, bob):
    Source.objects.create(reader=alice, url="https://alpha.example/feed", title="Mine")
    Source.objects.create(
        reader=bob, url="https://beta.example/atom.xml"
    )  # Bob's: not a duplicate for Alice
    data = NESTED.replace(
        b"</body>", b'<outline text="Again" xmlUrl="https://loose.example/rss"/></body>'
    )
    result = import_opml(alice, data)
    assert (result.added, result.duplicates) == (3, 2)
    assert (
        Source.objects.get(reader=alice, url="https://alpha.example/feed").title
        == "Mine"
    )
    assert "2 duplicates skipped" in result.summary()


def test_existing_categories_are_reused_and_new_ones_go_last(alice):
    Category.objects.create(reader=alice, name="Pages", position=0)
    Category.objects.create(reader=alice, name="Other", position=5)
    import_opml(alice, NESTED)
    names = list(Category.objects.filter(reader=alice).values_list("name", flat=True))
    assert names == ["Pages", "Other", "News", "News / Europe"]


def test_a_malformed_file_imports_nothing(alice):
    # The first outlines are fine; the last has no xmlUrl.
    bad = NESTED.replace(b"</body>", b'<outline text="Broken"/></body>')
    with pytest.raises(OpmlError, match="has no xmlUrl"):
        import_opml(alice, bad)
    assert not Source.objects.filter(reader=alice).exists()
    assert not Category.objects.filter(reader=alice).exists()


def test_an_invalid_link_pattern_imports_nothing(alice):
    bad = NESTED.replace(b"/news/\\d+", b"/news/(unclosed")
    with pytest.raises(OpmlError, match="not a valid regular expression"):
        import_opml(alice, bad)
    assert not Source.objects.filter(reader=alice).exists()


def test_a_failure_while_storing_rolls_everything_back(alice, monkeypatch):
    from newsroom.sources import opml_io

    real = Source.objects.bulk_create

    def fail_after_categories(*args, **kwargs):
        raise RuntimeError("disk full")

    monkeypatch.setattr(Source.objects, "bulk_create", fail_after_categories)
    with pytest.raises(RuntimeError):
        opml_io.import_opml(alice, NESTED)
    monkeypatch.setattr(Source.objects, "bulk_create", real)
    assert not Category.objects.filter(reader=alice).exists()


@pytest.fixture
def no_network(monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("the starter list must import without the network")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)
    monkeypatch.setattr(socket, "getaddrinfo", refuse)


def test_starter_list_imports_without_network_once(alice, no_network):
    doc = parse_opml(STARTER_OPML.read_bytes())
    assert 28 <= len(doc.feeds) <= 40
    assert all(f.url.startswith("https://") for f in doc.feeds)
    assert len({f.url for f in doc.feeds}) == len(doc.feeds)
    titles = " ".join(f.title for f in doc.feeds)
    for name in [
        "BBC",
        "Al Jazeera",
        "NPR",
        "Guardian",
        "DW",
        "France 24",
        "South China Morning Post",
        "Ars Technica",
        "Nature",
    ]:
        assert name in titles
    result = import_starter(alice)
    assert result.added == len(doc.feeds)
    assert Category.objects.filter(reader=alice).count() == len(doc.categories) >= 6
    assert not Source.objects.filter(reader=alice, category=None).exists()
    again = import_starter(alice)
    assert (again.added, again.duplicates) == (0, len(doc.feeds))


def test_starter_button_imports_for_the_logged_in_reader_only(alice_client, alice, bob):
    response = alice_client.post(reverse("starter_import"), {"next": "dashboard"})
    assert response.status_code == 302 and response["Location"] == reverse("dashboard")
    assert Source.objects.filter(reader=alice).count() > 25
    assert not Source.objects.filter(reader=bob).exists()
    page = alice_client.get(reverse("dashboard")).content.decode()
    assert "BBC News: World" in page and "Asia and Pacific" in page
    assert "No sources yet" not in page


# --- commands --------------------------------------------------------------------


def test_import_command_prints_progress_and_imports(alice, tmp_path):
    path = tmp_path / "feeds.opml"
    path.write_bytes(NESTED)
    out = StringIO()
    call_command("import_opml", str(path), reader="alice", stdout=out)
    text = out.getvalue()
    assert "Read 4 feeds in 3 folders" in text
    assert "Imported 4 sources, 3 new categories." in text
    assert Source.objects.filter(reader=alice).count() == 4


def test_import_command_refuses_a_bad_file_and_imports_nothing(alice, tmp_path):
    path = tmp_path / "bad.opml"
    path.write_bytes(b"<html><body>not opml</body></html>")
    with pytest.raises(CommandError, match="not OPML.*Nothing was imported"):
        call_command("import_opml", str(path), reader="alice", stdout=StringIO())
    assert not Source.objects.exists()


def test_import_command_names_a_missing_reader_and_file(alice, tmp_path):
    with pytest.raises(CommandError, match="no reader named 'nobody'"):
        call_command("import_opml", str(STARTER_OPML), reader="nobody")
    with pytest.raises(CommandError, match="Cannot read"):
        call_command("import_opml", str(tmp_path / "missing.opml"), reader="alice")


def test_export_command_writes_the_readers_opml(alice, bob, tmp_path):
    import_opml(alice, NESTED)
    import_starter(bob)
    out, err = StringIO(), StringIO()
    call_command("export_opml", reader="alice", stdout=out, stderr=err)
    assert outlines(out.getvalue().encode()) == outlines(NESTED)
    assert "Exported 4 sources in 3 categories" in err.getvalue()
    target = tmp_path / "out.opml"
    call_command("export_opml", reader="alice", output=str(target), stdout=StringIO())
    assert outlines(target.read_bytes()) == outlines(NESTED)


# --- pages -----------------------------------------------------------------------


def test_upload_imports_and_reports_counts(alice_client, alice):
    upload = SimpleUploadedFile("feeds.opml", NESTED, content_type="text/x-opml")
    response = alice_client.post(reverse("opml_import"), {"file": upload}, follow=True)
    assert response.status_code == 200
    assert "Imported 4 sources, 3 new categories." in response.content.decode()
    assert Source.objects.filter(reader=alice).count() == 4


def test_upload_of_a_malformed_file_says_what_is_wrong_and_imports_nothing(
    alice_client, alice
):
    upload = SimpleUploadedFile(
        "feeds.opml", b"<opml><body><outline text='x'/></body></opml>"
    )
    response = alice_client.post(reverse("opml_import"), {"file": upload})
    assert response.status_code == 400
    text = response.content.decode()
    assert "has no xmlUrl" in text and "Nothing was imported" in text
    assert not Source.objects.exists()


def test_upload_of_a_very_large_file_is_refused_and_imports_nothing(alice_client):
    from newsroom.sources.opml import MAX_BYTES

    row = b"<outline text='x' xmlUrl='https://x.example/%d'/>\n"
    body = b"".join(row % i for i in range(MAX_BYTES // len(row) + 10))
    data = b"<opml><body>" + body + b"</body></opml>"
    assert len(data) > MAX_BYTES
    upload = SimpleUploadedFile("big.opml", data)
    response = alice_client.post(reverse("opml_import"), {"file": upload})
    assert response.status_code == 400
    assert "OPML files up to 5 MB can be imported" in response.content.decode()
    assert not Source.objects.exists()


def test_upload_without_a_file_is_refused(alice_client):
    response = alice_client.post(reverse("opml_import"), {})
    assert response.status_code == 400
    assert "This field is required" in response.content.decode()


def test_download_is_an_opml_attachment_of_the_readers_sources(
    alice_client, alice, bob
):
    import_opml(alice, NESTED)
    import_starter(bob)
    response = alice_client.get(reverse("opml_export"))
    assert response.status_code == 200
    assert response["Content-Type"].startswith("text/x-opml")
    assert "attachment" in response["Content-Disposition"]
    assert outlines(response.content) == outlines(NESTED)
