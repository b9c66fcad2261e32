"""Helpers the test modules share: plain functions and constants, no tests, no fixtures
(the fixtures that build things are in tests/conftest.py)."""
