"""Shared pytest configuration for every test suite."""
