"""A real headless browser for the web view's tests: Debian's chromium and chromium-driver,
driven by Selenium (the `test` extra).

The packages are installed on first use, as the control plane is built on first use:
``apt-get update`` then ``apt-get install chromium chromium-driver fonts-liberation``, when
apt-get is there and we are root. What cannot be had is a failure under CI=true and a skip
otherwise, with the reason. No browser is ever downloaded from anywhere but the
distribution's packages.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

# Fonts: without recommended packages the pages would render text as empty boxes.
PACKAGES = ("chromium", "chromium-driver", "fonts-liberation")
CHROMIUM = "chromium"
DRIVER = "chromedriver"
INSTALL_TIMEOUT = 1200.0


def _unavailable(reason: str) -> None:
    if os.environ.get("CI") == "true":
        pytest.fail(reason, pytrace=False)
    pytest.skip(reason)


def _install(log: Path) -> str | None:
    """Install the packages with apt-get; None when done, else why not."""
    if shutil.which("apt-get") is None:
        return "apt-get is not here to install Debian's chromium and chromium-driver"
    if os.geteuid() != 0:
        return "installing chromium and chromium-driver needs root (apt-get)"
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    # Another apt-get (a second test run, a person) may hold the lock: wait for it.
    lock = ["-o", "DPkg::Lock::Timeout=600"]
    steps = (
        ["apt-get", *lock, "update", "-q"],
        ["apt-get", *lock, "install", "-y", "-q", "--no-install-recommends", *PACKAGES],
    )
    with log.open("ab") as out:
        for step in steps:
            try:
                done = subprocess.run(
                    step, stdout=out, stderr=subprocess.STDOUT, env=env, timeout=INSTALL_TIMEOUT
                )
            except subprocess.TimeoutExpired:
                return f"{' '.join(step)} took over {INSTALL_TIMEOUT:.0f}s (log: {log})"
            if done.returncode != 0:
                return f"{' '.join(step)} exited {done.returncode} (log: {log})"
    return None


def ensure_browser(log: Path) -> tuple[str, str]:
    """The paths of chromium and chromedriver, installed first if missing."""
    try:
        import selenium  # noqa: F401
    except ImportError:
        _unavailable("selenium is not installed: pip install -e '.[test]'")
    if shutil.which(CHROMIUM) is None or shutil.which(DRIVER) is None:
        failure = _install(log)
        if failure is not None:
            _unavailable(f"no headless browser for the web view's tests: {failure}")
    chromium, driver = shutil.which(CHROMIUM), shutil.which(DRIVER)
    if chromium is None or driver is None:
        _unavailable(f"installed {' '.join(PACKAGES)} but {CHROMIUM} or {DRIVER} is not on PATH")
    assert chromium is not None and driver is not None
    return chromium, driver


def start_browser(chromium: str, driver: str, log: Path) -> Any:
    """A headless Chromium under Selenium, with a window large enough for the pages."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = chromium
    for argument in (
        "--headless=new",
        # Tests run as root, where Chromium's sandbox cannot start.
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--window-size=1400,1000",
        "--hide-scrollbars",
    ):
        options.add_argument(argument)
    # The driver is Debian's, given by path: Selenium's own manager must not look for one.
    service = Service(executable_path=driver, log_output=str(log))
    return webdriver.Chrome(options=options, service=service)
