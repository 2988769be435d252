"""A selector's verdict on a device is remembered for as long as that device object lives:
the same object is not evaluated again, a new object (a changed slice) is."""

from __future__ import annotations

import pytest

from kubesalvo.core.dra.selectors import SelectorError, Selectors

DRIVER = "gpu.example.com"
IS_A100 = f'device.attributes["{DRIVER}"].model == "a100"'


def device(model: str) -> dict:
    return {"name": "gpu-0", "attributes": {"model": {"string": model}}}


def test_a_devices_verdict_is_remembered_while_the_object_lives() -> None:
    selectors = Selectors()
    published = device("a100")
    assert selectors.device_matches(IS_A100, DRIVER, published)
    # Changed in place (which informers never do): the remembered verdict still answers,
    # so the expression was not evaluated a second time.
    published["attributes"]["model"] = {"string": "h100"}
    assert selectors.device_matches(IS_A100, DRIVER, published)


def test_a_new_device_object_is_evaluated_afresh() -> None:
    selectors = Selectors()
    assert selectors.device_matches(IS_A100, DRIVER, device("a100"))
    assert not selectors.device_matches(IS_A100, DRIVER, device("h100"))
    assert selectors.device_matches(IS_A100, DRIVER, device("a100"))


def test_a_runtime_error_is_raised_each_time_never_remembered() -> None:
    selectors = Selectors()
    missing = f'device.attributes["{DRIVER}"].memory > 1'
    published = device("a100")
    for _ in range(2):
        with pytest.raises(SelectorError):
            selectors.device_matches(missing, DRIVER, published)
