"""The account pages in Chromium: sign up, log in and out on a phone, and with JavaScript off."""

from __future__ import annotations

import pytest
import redis

from accounts.selectors import login_summary, person_find
from tests.conftest import browser_login

pytestmark = pytest.mark.browser

PHONE = {"width": 390, "height": 844}


def test_sign_up_log_out_and_log_in_on_a_phone(
    browser, live_site: str, r: redis.Redis, screenshot_dir
):
    context = browser.new_context(base_url=live_site, viewport=PHONE, locale="en-US")
    page = context.new_page()
    page.goto("/accounts/signup/")
    assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")
    page.fill("input[name=username]", "小明")
    page.fill("input[name=password1]", "phone-pass-word-31")
    page.fill("input[name=password2]", "phone-pass-word-31")
    page.click("form[action='/accounts/signup/'] button[type=submit]")
    page.wait_for_url(f"{live_site}/")
    assert page.locator(".who").inner_text() == "小明"
    page.screenshot(path=str(screenshot_dir / "accounts-signed-up-phone.png"))
    page.click("button:has-text('Log out')")
    page.wait_for_selector("text=You have logged out.")
    page.goto("/accounts/login/?next=/accounts/me/")
    page.fill("input[name=username]", "小明")
    page.fill("input[name=password]", "phone-pass-word-31")
    page.click("form[action='/accounts/login/'] button[type=submit]")
    page.wait_for_url(f"{live_site}/accounts/me/")
    person = person_find(client=r, username="小明")
    assert person is not None
    summary = login_summary(client=r, person_id=person.id)
    assert summary is not None and summary.logins == 2  # sign-up, then log-in
    context.close()


def test_login_form_works_without_javascript(browser, live_site: str, buyer):
    context = browser.new_context(base_url=live_site, java_script_enabled=False, locale="en-US")
    page = context.new_page()
    browser_login(page, buyer)
    assert page.locator(".who").inner_text() == buyer.username
    cookies = {c["name"]: c for c in context.cookies()}
    session = cookies["sessionid"]
    assert session["httpOnly"] and session["sameSite"] == "Lax"
    context.close()


def test_wrong_password_shows_the_error_in_chinese(browser, live_site: str, buyer):
    context = browser.new_context(base_url=live_site, locale="zh-CN")
    page = context.new_page()
    page.set_extra_http_headers({"Accept-Language": "zh-hans"})
    page.goto("/accounts/login/")
    page.fill("input[name=username]", buyer.username)
    page.fill("input[name=password]", "not-it-at-all")
    page.click("form[action='/accounts/login/'] button[type=submit]")
    page.wait_for_selector("text=用户名或密码错误。")
    context.close()
