"""The web view's browser: Debian's headless Chromium under Selenium, installed on first use
(tests/helpers/browser.py), one per session; and ``screenshot``, which saves a page's
picture in the test's folder and, for review, in /work/screenshots/ when that exists."""

from __future__ import annotations

import shutil
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.helpers.browser import ensure_browser, start_browser

REVIEW_FOLDER = Path("/work/screenshots")


@pytest.fixture(scope="session")
def browser(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    folder = tmp_path_factory.mktemp("browser")
    chromium, driver = ensure_browser(folder / "apt.log")
    session = start_browser(chromium, driver, folder / "chromedriver.log")
    try:
        yield session
    finally:
        session.quit()


@pytest.fixture
def screenshot(browser: Any, tmp_path: Path) -> Callable[[str], Path]:
    """``screenshot(name)``: the whole page as ``tmp_path/name.png`` (copied for review)."""

    def take(name: str) -> Path:
        # The full height of the page, so that no table is cut off at the window's edge.
        height = browser.execute_script("return document.documentElement.scrollHeight")
        browser.set_window_size(1400, max(1000, min(int(height) + 40, 6000)))
        path = tmp_path / f"{name}.png"
        browser.save_screenshot(str(path))
        if REVIEW_FOLDER.is_dir():
            shutil.copy(path, REVIEW_FOLDER / path.name)
        return path

    return take
