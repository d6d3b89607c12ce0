import pytest
from confapp.settings import load


@pytest.fixture(scope="session")
def db_conf():
    """Loaded once for the whole suite: parsing the file is slow."""
    return load('{"users": ["alice", "bob"], "debug": false}')
