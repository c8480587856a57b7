"""A checker for script-capable markup in stored HTML, independent of nh3: it
parses the HTML with the standard library and reports what a browser could
run or be styled into doing."""

from __future__ import annotations

from html.parser import HTMLParser

FORBIDDEN_ELEMENTS = {
    "script",
    "style",
    "iframe",
    "object",
    "embed",
    "applet",
    "frame",
    "frameset",
    "form",
    "input",
    "button",
    "textarea",
    "select",
    "svg",
    "math",
    "link",
    "meta",
    "base",
    "noscript",
    "template",
}
URL_ATTRIBUTES = {
    "href",
    "src",
    "action",
    "formaction",
    "xlink:href",
    "background",
    "poster",
    "lowsrc",
    "dynsrc",
    "srcset",
    "data",
    "codebase",
}
BAD_SCHEMES = ("javascript:", "vbscript:", "data:", "livescript:", "mocha:")


def _squash(value: str) -> str:
    # Browsers ignore whitespace and control characters inside a scheme.
    return "".join(ch for ch in value if ch > " " and ch != "\x7f").lower()


class _Checker(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.problems: list[str] = []

    def handle_starttag(self, tag, attrs):
        self._check(tag, attrs)

    def handle_startendtag(self, tag, attrs):
        self._check(tag, attrs)

    def _check(self, tag, attrs):
        if tag in FORBIDDEN_ELEMENTS:
            self.problems.append(f"<{tag}> element")
        for name, value in attrs:
            if name.startswith("on"):
                self.problems.append(f"{name} handler on <{tag}>")
            if name == "style":
                self.problems.append(f"style attribute on <{tag}>")
            if (
                name in URL_ATTRIBUTES
                and value
                and _squash(value).startswith(BAD_SCHEMES)
            ):
                self.problems.append(f"{name}={value!r} on <{tag}>")
            if tag == "a" and name == "href" and value:
                rel = dict(attrs).get("rel") or ""
                if "noopener" not in rel.split():
                    self.problems.append("link without rel=noopener")


def unsafe_markup(html: str) -> list[str]:
    """What in `html` could run script or restyle the page; empty when safe."""
    checker = _Checker()
    checker.feed(html)
    checker.close()
    return checker.problems
