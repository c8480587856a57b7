"""Each item of the day gets one of the reader's categories.

`assign` is pure (it takes any objects with id, name and description).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from newsroom.briefing.embed import Embedder
from newsroom.briefing.events import ItemView

DEFAULT_CATEGORIES = [
    (
        "Politics",
        "Government, elections, parliaments, parties, laws, ministers, votes and political crises.",
    ),
    (
        "Economics",
        "Economy, markets, stocks, interest rates, central banks, inflation, trade, companies and jobs.",
    ),
    (
        "Science and technology",
        "Science, research, space, health studies, computers, software, gadgets, artificial intelligence and the internet.",
    ),
    (
        "World",
        "International news, disasters, earthquakes, wildfires, wars, diplomacy and events in other countries.",
    ),
    (
        "Culture",
        "Arts, film, festivals, music, books, museums, television, sport and entertainment.",
    ),
]


def ensure_categories(reader) -> list:
    """The reader's categories in their order; the defaults for a reader with none."""
    from newsroom.sources.models import Category

    categories = list(
        Category.objects.filter(reader=reader).order_by("position", "name")
    )
    if categories:
        return categories
    for position, (name, description) in enumerate(DEFAULT_CATEGORIES):
        Category.objects.get_or_create(
            reader=reader,
            name=name,
            defaults={"description": description, "position": position},
        )
    return list(Category.objects.filter(reader=reader).order_by("position", "name"))


def assign(
    items: Sequence[ItemView],
    vectors: np.ndarray,
    categories: Sequence,  # objects with id, name, description (Category rows)
    source_categories: dict[int, int | None],
    embedder: Embedder,
) -> dict[int, int]:
    """Set item.category_id for every item that has none: the source's category,
    else the category whose name and description are closest in meaning.
    Returns {item id: category id} for the items that were newly placed."""
    if not categories:
        return {}
    own = {c.id for c in categories}
    described = embedder.encode(
        [f"{c.name}. {c.description}".strip() for c in categories]
    )
    placed: dict[int, int] = {}
    need = [n for n, item in enumerate(items) if item.category_id not in own]
    if need:
        sims = vectors[need] @ described.T
        best = sims.argmax(axis=1)
        for row, n in enumerate(need):
            item = items[n]
            from_source = source_categories.get(item.source_id)
            item.category_id = (
                from_source if from_source in own else categories[int(best[row])].id
            )
            placed[item.id] = item.category_id
    return placed
