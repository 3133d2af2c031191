"""A web worker that started while the store did not answer runs its startup checks on the first
client it makes (`store.check_on_connect`): a refusing check holds every request at the 503 page
until the store is fit; one that passes runs once. `serve` on a store that does not answer
refuses in one line, no traceback."""

from __future__ import annotations

from typing import Any

import pytest
import redis
from django.core.management import CommandError, call_command
from django.test import Client

from strongroom import store
from strongroom.startup import StoreNotReady


class Check:
    """A startup check that refuses while `refusing`, and counts its runs."""

    def __init__(self) -> None:
        self.refusing = True
        self.runs: list[redis.Redis] = []

    def __call__(self, client: redis.Redis) -> None:
        self.runs.append(client)
        if self.refusing:
            raise StoreNotReady("run `manage.py upgrade` first")


def test_a_waiting_check_holds_back_every_client_while_it_refuses_then_runs_once(
    r: redis.Redis,
) -> None:
    check = Check()
    store.reset_store()
    store.check_on_connect(check)
    try:
        for _ in range(2):  # no client is handed out while its check refuses
            with pytest.raises(StoreNotReady):
                store.get_store()
        check.refusing = False
        client = store.get_store()
        assert check.runs[-1] is client and len(check.runs) == 3
        assert store.get_store() is client and len(check.runs) == 3
    finally:
        check.refusing = False
        store.get_store()


def test_a_page_asked_while_the_check_refuses_is_the_503_page(r: redis.Redis) -> None:
    check = Check()
    store.reset_store()
    store.check_on_connect(check)
    try:
        for path in ("/", "/catalog/", "/accounts/login/"):
            answer = Client(raise_request_exception=False).get(path)
            assert answer.status_code == 503, path
            assert answer["Retry-After"] == "5"
    finally:
        check.refusing = False
        store.get_store()
    assert Client().get("/").status_code == 200


def test_serve_on_a_store_that_does_not_answer_says_so_in_one_line(
    r: redis.Redis, settings: Any
) -> None:
    settings.REDIS_URL = "redis://127.0.0.1:1/0"  # nothing listens on port 1
    store.reset_store()
    try:
        with pytest.raises(CommandError, match="REDIS_URL's store does not answer") as refused:
            call_command("serve", "--no-demo")
        assert "Connection refused" in str(refused.value) and "run this again" in str(refused.value)
    finally:
        store.reset_store()
