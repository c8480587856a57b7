"""Renderers for source kinds that a plain HTTP fetch cannot collect.

The run executor fetches `feed` and `scrape` sources itself. A `browser` source is
rendered by whichever app registered a renderer for it (sessions_app does, in its
AppConfig.ready); the executor then extracts links from the rendered HTML with the
source's link pattern, exactly as for a scraped page, and journals them as a
delivery of kind `browser`.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass


@dataclass(frozen=True)
class RenderedPage:
    url: str  # the page's URL after any navigation
    html: str  # the rendered DOM


class RenderError(Exception):
    """A page could not be rendered; the message is shown to the reader as is."""


Renderer = Callable[["object"], Awaitable[RenderedPage]]  # async def render(source)

_renderers: dict[str, Renderer] = {}


def register_renderer(kind: str, render: Renderer) -> None:
    _renderers[kind] = render


def renderer_for(kind: str) -> Renderer | None:
    return _renderers.get(kind)
