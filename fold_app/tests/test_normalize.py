"""Entries to item versions: keys, completeness, and the merge rule (pure)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from fold_app.normalize import best_per_key, completeness, entry_key, merge, normalize
from fold_app.parsing import RawEntry

T0 = datetime(2026, 6, 1, 12, 0, tzinfo=UTC)


def raw(**kw) -> RawEntry:
    kw.setdefault("base", "https://ex.org/feed")
    return RawEntry(**kw)


def test_the_key_is_the_guid_else_the_url_else_the_content():
    with_guid = normalize(raw(guid="g", url="https://ex.org/a", title="t"))
    same_guid_other_url = normalize(raw(guid="g", url="https://ex.org/b", title="t"))
    assert with_guid.key == same_guid_other_url.key
    by_url = normalize(raw(url="https://ex.org/a", title="t"))
    assert by_url.key == normalize(raw(url="https://ex.org/a", title="other")).key
    assert by_url.key != with_guid.key
    by_content = normalize(raw(title="t", content="<p>x</p>"))
    assert by_content.key == entry_key("", "", "t", "<p>x</p>")
    assert by_content.key != normalize(raw(title="t", content="<p>y</p>")).key


def test_a_guid_equal_to_another_entrys_url_does_not_collide():
    assert entry_key("https://ex.org/a", "", "", "") != entry_key(
        "", "https://ex.org/a", "", ""
    )


def test_an_entry_with_nothing_to_show_is_skipped():
    assert normalize(raw()) is None


def test_urls_resolve_and_unsafe_links_are_dropped():
    assert normalize(raw(url="/a", title="t")).url == "https://ex.org/a"
    assert normalize(raw(url="javascript:alert(1)", title="t")).url == ""
    assert normalize(raw(url="https://ex.org/" + "x" * 3000, title="t")).url == ""


def test_titles_are_plain_text_and_controls_are_removed():
    version = normalize(
        raw(
            title="<b>Big</b>\x00 &amp; news",
            title_is_html=True,
            url="https://ex.org/a",
        )
    )
    assert version.title == "Big & news"


def test_completeness_counts_fields_then_length():
    bare = normalize(raw(url="https://ex.org/a"))
    titled = normalize(raw(url="https://ex.org/a", title="t"))
    dated = normalize(raw(url="https://ex.org/a", title="t", published=T0))
    long = normalize(
        raw(
            url="https://ex.org/a",
            title="t",
            published=T0,
            content="<p>" + "word " * 400 + "</p>",
        )
    )
    assert (
        bare.completeness < titled.completeness < dated.completeness < long.completeness
    )
    assert completeness(long) == long.completeness


def test_more_complete_wins_whatever_the_order():
    short = normalize(raw(guid="g", title="t"))
    full = normalize(raw(guid="g", title="t", url="https://ex.org/a", published=T0))
    early, late = T0, T0 + timedelta(minutes=1)
    state = merge(None, full, early, "01A")
    assert merge(state, short, late, "01B") is None  # a later but poorer version loses
    state = merge(None, short, late, "01B")
    assert merge(state, full, early, "01A").url == "https://ex.org/a"


def test_equal_completeness_goes_to_the_later_delivery_in_journal_order():
    a = normalize(raw(guid="g", title="first"))
    b = normalize(raw(guid="g", title="second"))
    assert a.completeness == b.completeness
    in_order = merge(merge(None, a, T0, "01A"), b, T0 + timedelta(seconds=1), "01B")
    out_of_order = merge(merge(None, b, T0 + timedelta(seconds=1), "01B"), a, T0, "01A")
    assert in_order.title == "second"
    # Folded out of order, the later delivery's version still stands, and
    # "first seen" moves back to the earlier delivery.
    assert out_of_order.title == "second" and out_of_order.first_seen_at == T0
    same_time = merge(merge(None, a, T0, "01A"), b, T0, "01B")
    assert same_time.title == "second"  # equal times: the larger id is later


def test_within_one_delivery_the_later_entry_wins_a_tie():
    a = normalize(raw(guid="g", title="first"))
    b = normalize(raw(guid="g", title="again"))
    assert best_per_key([a, b])[a.key].title == "again"


def test_control_characters_go_from_plain_titles_guids_authors_and_urls():
    version = normalize(
        raw(
            title="Big\x07 news\x1b today",
            guid="urn:\x01x",
            author="Ann\x7f\u00a0Lee",
            url="https://ex.org/\x00a\x1fb",
        )
    )
    assert version.title == "Big news today"
    assert version.guid == "urn:x"
    assert version.author == "Ann Lee"  # the no-break space collapses too
    assert version.url == "https://ex.org/ab"
