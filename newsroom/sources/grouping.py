from __future__ import annotations

from dataclasses import dataclass, field

from newsroom.sources.models import Category, Source


@dataclass
class SourceGroup:
    category: Category | None
    sources: list[Source] = field(default_factory=list)

    @property
    def name(self) -> str:
        return self.category.name if self.category else "Uncategorised"


def sources_by_category(reader) -> list[SourceGroup]:
    """The reader's sources grouped by category, in category order; uncategorised last."""
    groups = {c.pk: SourceGroup(c) for c in Category.objects.filter(reader=reader)}
    loose = SourceGroup(None)
    for source in Source.objects.filter(reader=reader).select_related("category"):
        groups.get(source.category_id, loose).sources.append(source)
    result = [g for g in groups.values() if g.sources]
    if loose.sources:
        result.append(loose)
    return result
