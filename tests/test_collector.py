"""The collector pause: off inside, as it was afterwards (whatever the block raised), frozen only when asked."""

from __future__ import annotations

import gc

import pytest

from harness.collector import collector_paused


@pytest.fixture(autouse=True)
def _restore_collector():
    was = gc.isenabled()
    yield
    (gc.enable if was else gc.disable)()


@pytest.mark.parametrize("enabled", [True, False])
def test_the_collector_is_off_inside_and_as_it_was_afterwards_even_after_an_error(enabled):
    (gc.enable if enabled else gc.disable)()
    with pytest.raises(KeyError):
        with collector_paused():
            assert not gc.isenabled()
            raise KeyError
    assert gc.isenabled() is enabled


def test_objects_are_frozen_only_when_asked():
    before = gc.get_freeze_count()
    with collector_paused():
        kept = [[] for _ in range(100)]
    assert gc.get_freeze_count() == before
    with collector_paused(freeze=True):
        kept += [[] for _ in range(100)]
    assert gc.get_freeze_count() >= before + 200
