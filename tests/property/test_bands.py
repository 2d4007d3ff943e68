"""The search bands (``batch.Batch.bands``) big searches go through: with every search of a
bootstrap taking them (``BANDS_ROWS`` 0), and a tick's searches of many rows over few keys
making them as they go, each engine's changes on random streams, its bootstraps included,
still equal the from-scratch oracle's and each other's."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given

from tests.property.strategies import tx_streams
from tests.property.test_incremental_matches_recompute import QUERIES, replay
from workers.arrangements import batch


@pytest.mark.parametrize("query", QUERIES[:6], ids=str)
@given(stream=tx_streams)
def test_searches_through_bands_match_recompute(query: str, stream: list[list[Any]]) -> None:
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(batch, "BANDS_ROWS", 0)
        replay(query, stream)
