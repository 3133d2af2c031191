"""Fixtures of the booking engine's crash tests."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from strongroom import embedded, store


@pytest.fixture
def own_store(tmp_path: Path) -> Iterator[Path]:
    """A store of this test alone (one server, not cluster mode), stopped at the end."""
    data_dir = tmp_path / "store"
    client = store.connect(embedded.ensure_running(data_dir))
    store.load_functions(client)
    client.close()
    yield data_dir
    embedded.stop(data_dir)
