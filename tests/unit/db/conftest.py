import pytest

from tests.unit.db.txdb import TxDb


@pytest.fixture
def db() -> TxDb:
    """An empty database with the built-in schema."""
    return TxDb()
