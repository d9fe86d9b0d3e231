"""Bulk work pauses the cyclic collector and gives it back as it was (nested pauses too)."""
import gc

from jsctl.model import gcpause


def test_paused_restores_the_collector_and_nests():
    assert gc.isenabled()
    with gcpause.paused():
        assert not gc.isenabled()
        with gcpause.paused():
            assert not gc.isenabled()
        assert not gc.isenabled()  # only the outermost pause ends it
    assert gc.isenabled()


def test_a_disabled_collector_stays_disabled_and_errors_end_the_pause():
    gc.disable()
    try:
        with gcpause.paused():
            pass
        assert not gc.isenabled()
    finally:
        gc.enable()
    try:
        with gcpause.paused():
            raise ValueError
    except ValueError:
        pass
    assert gc.isenabled()
