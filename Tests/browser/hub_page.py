#!/usr/bin/env python3
"""Drives the hub's coordinator page in headless Chromium (Debian's chromium and chromedriver,
selenium from PyPI) the way a coordinator would: sign in (a wrong password first), find the box
that called for help on the map and in the list, acknowledge its call, raise an alert for the
network, look at it on a phone-sized screen. Asserts on the DOM at every step and saves a
screenshot of each state in OUTPUT.

Usage: hub_page.py URL NAME PASSWORD CALLING-BOX ALERT-ID RESIDENT OUTPUT
Exit 0 when every check holds; otherwise the failed check is on stderr (and a screenshot of
the page as it was is saved as failure.png).
"""
import os
import sys

from browser import Browser
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import Select, WebDriverWait

url, name, password, calling_box, alert_id, resident, output = sys.argv[1:8]

browser = Browser(output)
driver, shot, check, submit, one = browser.driver, browser.shot, browser.check, browser.submit, browser.one
text, displayed, attribute, press = browser.text, browser.displayed, browser.attribute, browser.press


try:
    # Nothing is shown without a session: the page sends the browser to sign in.
    driver.get(url + "/")
    check(driver.current_url.endswith("/login"), "an anonymous visit lands on the sign-in page")
    shot("1-sign-in")

    one("input[name=name]").send_keys(name)
    one("input[name=password]").send_keys(password + "-wrong")
    submit(one("#sign-in button[type=submit]"))
    check("Wrong name or password" in text("#sign-in-error"), "a wrong password is refused with a clear message")

    one("input[name=name]").send_keys(name)
    one("input[name=password]").send_keys(password)
    submit(one("#sign-in button[type=submit]"))
    check(driver.current_url.rstrip("/") == url, "the right password opens the overview")
    cookie = driver.get_cookie("vigil_hub_session")
    check(cookie is not None and cookie.get("httpOnly") and cookie.get("secure") and cookie.get("sameSite") == "Strict",
          "the session cookie is HttpOnly, Secure and SameSite=Strict")

    check(text("#open-calls b") == "1", "the summary counts one open call for help")
    # Read through the page's selectors, found afresh: its live stream may replace any section.
    check(attribute(f"#map g.box-dot.calling[data-box='{calling_box}'] circle", "r") == "12", "the calling box is drawn large and red on the map")
    check(len(driver.find_elements(By.CSS_SELECTOR, "#map g.box-dot")) == 2, "both boxes are on the map")
    row = f"#open-alerts tr.alert.call.open[data-alert='{alert_id}']"
    listed = text(row)
    check(calling_box in listed and "SOS" in listed, "the call for help is listed with the box that raised it")
    check("nobody yet" in text(f"{row} .acks"), "nobody has acknowledged it yet")
    box_row = f"#boxes tr.box[data-box='{calling_box}']"
    occupancy = text(f"{box_row} .occupancy").split()[0]
    check(occupancy.isdigit() and int(occupancy) > 0, f"the box's occupancy is a count ({occupancy})")
    check(text(f"{box_row} .calls") == "1", "the box list shows its open call")
    check(one(f"#escalations tr.escalation[data-resident='{resident}']") is not None, "the resident in an escalation is listed")
    shot("2-overview-call-for-help")

    press(f"{row} button.ack")
    check("Acknowledged" in text("#notice"), "acknowledging says what happened")
    row = f"#open-alerts tr.alert[data-alert='{alert_id}']"
    check(f"coordinator {name}" in text(f"{row} .acks"), "the call shows the coordinator's acknowledgement")
    check(not driver.find_elements(By.CSS_SELECTOR, f"{row} button.ack"), "the acknowledge button is gone once acknowledged")
    shot("3-acknowledged")

    form = one("#raise-alert")
    Select(form.find_element(By.NAME, "kind")).select_by_value("evacuate")
    form.find_element(By.NAME, "text").send_keys("Move to the upper floor")
    submit(form.find_element(By.CSS_SELECTOR, "button[type=submit]"))
    check("raised" in text("#notice"), "raising an alert says what happened")
    # The rows' texts read in one script: no row can be replaced between two reads.
    texts = driver.execute_script("return [...document.querySelectorAll('#open-alerts tr.alert.open')].map(r => r.innerText)")
    raised = [t for t in texts if "Move to the upper floor" in t]
    check(len(raised) == 1 and f"coordinator {name}" in raised[0] and "Evacuate" in raised[0],
          "the network alert is listed as the coordinator's")
    shot("4-network-alert")

    driver.set_window_size(390, 1600)
    driver.refresh()
    check(displayed("#open-calls"), "the summary is readable on a phone-sized screen")
    width = driver.execute_script("return document.documentElement.scrollWidth")
    check(width <= 400, f"the page does not scroll sideways on a phone ({width}px wide)")
    fits = browser.read("#open-alerts button.cancel", lambda cancel: cancel.is_displayed() and cancel.rect["x"] + cancel.rect["width"] <= 390)
    check(fits,
          "a row's button is within the phone's screen (rows become cards)")
    shot("5-phone")

    driver.set_window_size(1280, 1400)
    submit(one("form[action='/logout'] button"))
    check(driver.current_url.endswith("/login"), "signing out returns to the sign-in page")
    driver.get(url + "/")
    check(driver.current_url.endswith("/login"), "after signing out the overview needs a new sign-in")
finally:
    driver.quit()
print("hub page: every check held")
