"""What the page tests in this folder share: headless Chromium (Debian's chromium and
chromedriver, driven by selenium from PyPI), screenshots, checks that say what they checked, and
submitting a form and waiting for the page it leads to."""
import os

from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.common.exceptions import StaleElementReferenceException, WebDriverException
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait


class Browser:
    def __init__(self, output):
        self.output = output
        os.makedirs(output, exist_ok=True)
        options = webdriver.ChromeOptions()
        options.binary_location = "/usr/bin/chromium"
        for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                     # The servers' certificates are self-signed (pinned, or checked by their
                     # fingerprint); the browser is told to go on.
                     "--ignore-certificate-errors", "--window-size=1280,1400"):
            options.add_argument(flag)
        self.driver = webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=options)
        self.driver.set_page_load_timeout(30)

    def shot(self, label):
        path = os.path.join(self.output, f"{label}.png")
        self.driver.save_screenshot(path)
        print(f"screenshot: {path}")

    def check(self, condition, what):
        if not condition:
            self.shot("failure")
            raise AssertionError(what)
        print(f"ok: {what}")

    def submit(self, button):
        """Clicks a form's button and waits for the page the POST leads to (the old one goes stale)."""
        page = self.driver.find_element(By.TAG_NAME, "html")
        button.click()

        def gone(_):
            # Chromedriver may answer "Node with given id does not belong to the document" instead
            # of a stale-element error while the old document is being replaced: gone either way.
            try:
                page.is_enabled()
                return False
            except WebDriverException:
                return True

        WebDriverWait(self.driver, 15).until(gone)

    def one(self, css):
        found = self.driver.find_elements(By.CSS_SELECTOR, css)
        self.check(len(found) == 1, f"exactly one {css} (found {len(found)})")
        return found[0]

    def read(self, css, reading):
        """What `reading` reads from the one element `css` finds, found again if a live update
        replaced it between finding and reading (the page's sections are swapped whole, at any
        moment, by its live stream)."""
        for attempt in range(5):
            try:
                return reading(self.one(css))
            except StaleElementReferenceException:
                if attempt == 4:
                    raise

    def text(self, css):
        return self.read(css, lambda element: element.text)

    def displayed(self, css):
        return self.read(css, lambda element: element.is_displayed())

    def attribute(self, css, name):
        return self.read(css, lambda element: element.get_attribute(name))

    def press(self, css):
        """Submits the form of the one button `css` finds, found and clicked in one script: the
        live stream may replace the section at any moment (a found element went stale between
        finding and clicking, three times running, while an SOS sounded)."""
        page = self.driver.find_element(By.TAG_NAME, "html")
        found = self.driver.execute_script(
            "const all = document.querySelectorAll(arguments[0]); if (all.length === 1) all[0].click(); return all.length;", css)
        self.check(found == 1, f"exactly one {css} (found {found})")

        def gone(_):
            try:
                page.is_enabled()
                return False
            except WebDriverException:
                return True

        WebDriverWait(self.driver, 15).until(gone)

    def quit(self):
        self.driver.quit()
