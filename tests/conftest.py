"""pytest's ``pytester`` fixture, for tests/testing/ (the pytest plugin's tests run small test
files in their own pytest). pytest takes ``pytest_plugins`` only from a conftest it loads at
start, so it is here and not in that folder's conftest."""

pytest_plugins = ["pytester"]
