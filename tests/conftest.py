"""Shared test settings: hypothesis runs derandomised (same cases every run)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import settings

settings.register_profile("smdlab", derandomize=True, deadline=None, max_examples=60)
settings.load_profile("smdlab")


@pytest.fixture
def rng() -> np.random.Generator:
    return np.random.default_rng(1234)
