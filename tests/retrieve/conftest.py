"""The API client fixture for the search REST tests (same as tests/api's)."""

from tests.api.conftest import client  # noqa: F401
