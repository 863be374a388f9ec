"""Shared test settings: hypothesis runs derandomised (same cases every run); the browser page."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import settings

settings.register_profile("smdlab", derandomize=True, deadline=None, max_examples=60)
settings.load_profile("smdlab")


@pytest.fixture
def rng() -> np.random.Generator:
    return np.random.default_rng(1234)


@pytest.fixture
def page():
    """A fresh page in headless Debian chromium (closed, with its browser, afterwards)."""
    from _browser import CHROMIUM, CHROMIUM_ARGS
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            pg = browser.new_page(viewport={"width": 1400, "height": 1000})
            errors: list[str] = []
            pg.on("pageerror", lambda exc: errors.append(str(exc)))
            pg.js_errors = errors  # type: ignore[attr-defined]
            yield pg
        finally:
            browser.close()
