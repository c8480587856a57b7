"""Names, titles, URLs and sentences: pure, no database."""

from __future__ import annotations

import pytest

from newsroom.briefing.text import (
    extract_names,
    lead,
    normalise_title,
    normalise_url,
    sentences,
)


def _names(text: str) -> list[tuple[str, str]]:
    return [(n.text, n.kind) for n in extract_names(text)]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "French President Emmanuel Macron met Prime Minister Keir Starmer in London.",
            [
                ("France", "place"),
                ("Emmanuel Macron", "actor"),
                ("Keir Starmer", "actor"),
                ("London", "place"),
            ],
        ),
        (
            "The Bank of England held rates as the U.K. economy slowed.",
            [("Bank of England", "organisation"), ("United Kingdom", "place")],
        ),
        (
            "Shares of Nvidia rose on Wall Street.",
            [("Nvidia", "organisation"), ("Wall Street", "organisation")],
        ),
        ("Powell's Fed surprised markets.", [("Federal Reserve", "organisation")]),
        (
            "The IMF and the EU disagreed.",
            [
                ("International Monetary Fund", "organisation"),
                ("European Union", "organisation"),
            ],
        ),
        ("On Monday the Labour Party won.", [("Labour Party", "organisation")]),
        ("Markets fell. Investors sold. Nothing else.", []),
    ],
)
def test_names_come_from_the_gazetteer_and_capitalised_spans(text, expected):
    assert _names(text) == expected


def test_titles_normalise_case_accents_punctuation_and_the_outlet_tail():
    assert (
        normalise_title("Café owners PROTEST — Daily Ledger") == "cafe owners protest"
    )
    assert (
        normalise_title("Fed raises rates: what it means")
        == "fed raises rates what it means"
    )
    assert normalise_title("") == ""


def test_urls_normalise_scheme_www_tracking_and_fragments():
    a = normalise_url("https://www.Example.com/news/story/?utm_source=rss&id=4#top")
    b = normalise_url("http://example.com/news/story?id=4&fbclid=xyz")
    assert a == b == "//example.com/news/story?id=4"
    assert normalise_url("not a url") == ""


def test_sentences_keep_abbreviations_and_lead_is_the_first():
    text = 'The U.S. economy grew 3%. Mr. Smith said so! "Yes," he added.'
    assert sentences(text) == [
        "The U.S. economy grew 3%.",
        "Mr. Smith said so!",
        '"Yes," he added.',
    ]
    assert lead(text) == "The U.S. economy grew 3%."
    assert lead("word " * 100, limit=30).endswith("…")
