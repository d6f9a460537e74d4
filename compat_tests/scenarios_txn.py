"""Idempotent and transactional producer scenarios, registered with
``compat_tests.scenarios.scenario`` like the others."""

from __future__ import annotations
