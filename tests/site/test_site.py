"""The site itself: home page, health check, language switch."""

from __future__ import annotations

from django.test import Client


def test_home_page_answers_in_both_languages() -> None:
    client = Client()
    english = client.get("/", HTTP_ACCEPT_LANGUAGE="en")
    assert english.status_code == 200
    assert "Strongroom" in english.content.decode()
    chinese = client.get("/", HTTP_ACCEPT_LANGUAGE="zh-hans")
    assert chinese.status_code == 200
    assert 'lang="zh-hans"' in chinese.content.decode()


def test_healthz_pings_the_store() -> None:
    response = Client().get("/healthz")
    assert response.status_code == 200
    assert response.json() == {"store": "ok", "writes": "ok"}
