"""The private-network rule pages share with fetches, and the missing-browser error."""

from __future__ import annotations

import asyncio

import pytest

from sessions_app import browser
from sessions_app.netrule import Refused, acheck_url, check_url


@pytest.mark.parametrize(
    "url",
    [
        "http://127.0.0.1:8000/",
        "http://localhost/",
        "http://10.1.2.3/",
        "http://[::1]/",
        "http://[::ffff:127.0.0.1]/",
        "http://169.254.169.254/latest/meta-data",
        "http://100.64.0.1/",
    ],
)
def test_private_addresses_are_refused(url):
    with pytest.raises(Refused, match="private networks"):
        check_url(url, allow_private=False)
    with pytest.raises(Refused):
        asyncio.run(acheck_url(url, allow_private=False))


def test_private_addresses_pass_when_allowed():
    check_url("http://127.0.0.1:8000/", allow_private=True)


@pytest.mark.parametrize(
    "url", ["file:///etc/passwd", "javascript:alert(1)", "http:///x"]
)
def test_only_http_pages_with_a_host(url):
    with pytest.raises(Refused):
        check_url(url, allow_private=True)


def test_a_public_address_passes():
    check_url("http://93.184.215.14/", allow_private=False)


def test_no_browser_names_both_install_routes(monkeypatch, settings, tmp_path):
    settings.NEWSROOM_BROWSER_PATH = ""
    monkeypatch.setattr(browser.shutil, "which", lambda name: None)
    monkeypatch.setattr(browser.os, "access", lambda path, mode: False)
    monkeypatch.setenv("PLAYWRIGHT_BROWSERS_PATH", str(tmp_path))
    with pytest.raises(browser.BrowserUnavailable) as caught:
        browser.find_chromium()
    message = str(caught.value)
    assert "apt-get install chromium" in message
    assert "playwright install chromium" in message


def test_a_configured_browser_that_is_not_there_is_named(settings):
    settings.NEWSROOM_BROWSER_PATH = "/nowhere/chromium"
    with pytest.raises(browser.BrowserUnavailable, match="/nowhere/chromium"):
        browser.find_chromium()
