"""The staff sales window page (/staff/window/): it shows what the store holds, the audit names
the window each save replaced, a window that sells nothing is refused, and the audit's words
are the reader's language."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator

import pytest
import redis
import time_machine
from django.test import Client, override_settings

from booking.domain.window import SalesWindow, window_remember
from booking.engine.window import window_read, window_set
from strongroom.audit import staff_audit_entries
from tests.booking_support import NOW
from tests.conftest import Someone


@pytest.fixture(autouse=True)
def rolling() -> Iterator[None]:
    with (
        time_machine.travel(NOW, tick=False),
        override_settings(
            STRONGROOM_SEASON_START=None, STRONGROOM_SEASON_END=None, STRONGROOM_SELL_DAYS=31
        ),
    ):
        yield


def shown_now(page: str) -> str:
    found = re.search(r'<p id="window-now">(.*?)</p>', page, re.S)
    assert found is not None
    return found.group(1)


def test_the_page_after_a_save_shows_the_window_saved_whatever_this_worker_kept(
    r: redis.Redis, staff: Someone, client_for: Callable[[Someone], Client]
) -> None:
    client = client_for(staff)
    window_set(client=r, actor_id="900", window=SalesWindow(days=31))  # another worker's save
    window_remember(SalesWindow(days=20))  # what this worker read a second ago
    page = client.get("/staff/window/").content.decode()
    assert "31 days ahead" in shown_now(page) and 'value="31"' in page


def test_the_audit_names_the_window_the_store_held_not_a_workers_old_copy(
    r: redis.Redis, staff: Someone, client_for: Callable[[Someone], Client]
) -> None:
    window_set(client=r, actor_id="900", window=SalesWindow(days=20))
    window_remember(SalesWindow(days=10))  # this worker's copy, seconds old
    done = client_for(staff).post("/staff/window/set/", {"mode": "rolling", "days": "31"})
    assert done.status_code == 302
    latest = staff_audit_entries(client=r, kind="sales_window")[0]
    assert latest.detail == "rolling 20 days -> rolling 31 days"
    saved = window_set(client=r, actor_id="900", window=SalesWindow(days=40))
    assert saved.before == "rolling 31 days" and saved.changed


def test_a_fixed_window_that_ends_before_tomorrow_is_refused(
    r: redis.Redis, staff: Someone, client_for: Callable[[Someone], Client]
) -> None:
    today = NOW.date().isoformat()
    sent = {"mode": "fixed", "first": "2026-11-20", "last": today}
    refused = client_for(staff).post("/staff/window/set/", sent)
    page = refused.content.decode()
    assert refused.status_code == 400 and "The window was not changed." in page
    assert "Nothing would be on sale: the last day must be tomorrow or later" in page
    assert window_read(client=r) is None and not staff_audit_entries(client=r, kind="sales_window")


def test_the_audit_says_a_change_of_the_window_in_chinese(
    r: redis.Redis, staff: Someone, client_for: Callable[[Someone], Client]
) -> None:
    client = client_for(staff)
    client.post("/staff/window/set/", {"mode": "rolling", "days": "20"})
    sent = {"mode": "fixed", "first": "2027-06-01", "last": "2027-06-30", "reason": "summer"}
    client.post("/staff/window/set/", sent)
    page = client.get("/staff/audit/?kind=sales_window", HTTP_ACCEPT_LANGUAGE="zh-hans")
    text = page.content.decode()
    assert "滚动 20 天 -&gt; 固定 2027-06-01 至 2027-06-30: summer" in text
    assert "滚动 31 天 -&gt; 滚动 20 天" in text
    english = client.get("/staff/audit/?kind=sales_window").content.decode()
    assert "rolling 20 days -&gt; fixed 2027-06-01 to 2027-06-30: summer" in english


def test_a_save_pressed_twice_is_saved_and_audited_once(
    r: redis.Redis, staff: Someone, client_for: Callable[[Someone], Client]
) -> None:
    """The form carries its own id: a second press (or a retry of the call) finds the save
    done and writes no second "rolling 31 days -> rolling 31 days" entry."""
    window_set(client=r, actor_id="900", window=SalesWindow(days=20))
    client = client_for(staff)
    token = re.search(
        r'name="request_id" value="([^"]+)"', client.get("/staff/window/").content.decode()
    )
    assert token is not None
    form = {"mode": "rolling", "days": "31", "request_id": token.group(1)}
    assert [client.post("/staff/window/set/", form).status_code for _ in range(2)] == [302, 302]
    details = [e.detail for e in staff_audit_entries(client=r, kind="sales_window")]
    # Newest first: the form's one save, then the set-up's (from the environment's 31 days).
    assert details == ["rolling 20 days -> rolling 31 days", "rolling 31 days -> rolling 20 days"]
    again = window_set(
        client=r, actor_id="1", window=SalesWindow(days=31), request_id=token.group(1)
    )
    assert again.before == "rolling 20 days"  # the same answer as the first time, nothing written
    assert again.changed


@pytest.mark.parametrize("language", ["en", "zh-hans"])
def test_saving_the_window_in_force_changes_nothing_and_says_so(
    r: redis.Redis, staff: Someone, client_for: Callable[[Someone], Client], language: str
) -> None:
    """The environment's window (31 days, none stored yet) saved as it is, then a stored fixed
    window saved as it is: no audit entry, nothing stored, "nothing changed" in the reader's
    language."""
    client = client_for(staff)
    client.cookies["django_language"] = language
    done = client.post("/staff/window/set/", {"mode": "rolling", "days": "31"}, follow=True)
    said = "未作更改：这就是当前生效的销售窗口。" if language == "zh-hans" else "Nothing changed"
    page = done.content.decode()
    assert said in page and "The sales window is changed." not in page
    assert window_read(client=r) is None and not staff_audit_entries(client=r, kind="sales_window")
    fixed = {"mode": "fixed", "first": "2027-06-01", "last": "2027-06-30"}
    client.post("/staff/window/set/", fixed)
    again = client.post("/staff/window/set/", fixed, follow=True).content.decode()
    assert said in again
    details = [e.detail for e in staff_audit_entries(client=r, kind="sales_window")]
    assert details == ["rolling 31 days -> fixed 2027-06-01..2027-06-30"]
