"""``trainop operator`` logging: httpx's per-request lines only at debug level."""

from __future__ import annotations

import logging
from collections.abc import Iterator

import pytest

from trainop.cli.operator import quiet_request_logs


@pytest.fixture
def httpx_logger() -> Iterator[logging.Logger]:
    logger = logging.getLogger("httpx2")
    saved = logger.level
    yield logger
    logger.setLevel(saved)


def test_request_lines_are_not_logged_at_info(httpx_logger: logging.Logger) -> None:
    quiet_request_logs(logging.INFO)
    assert not httpx_logger.isEnabledFor(logging.INFO)
    assert httpx_logger.isEnabledFor(logging.WARNING)


def test_request_lines_are_logged_at_debug(httpx_logger: logging.Logger) -> None:
    quiet_request_logs(logging.DEBUG)
    assert httpx_logger.isEnabledFor(logging.INFO)
