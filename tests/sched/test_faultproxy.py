"""The fault proxy refuses to listen anywhere but loopback.

Its faults are exercised against the real API server in test_faultproxy_integration.py.
"""

from __future__ import annotations

import msgspec
import pytest

from kubesalvo.sched.faultproxy import FaultProxy, status_body


@pytest.mark.parametrize("host", ["0.0.0.0", "10.1.2.3", "192.168.0.1"])
def test_the_proxy_listens_on_loopback_only(host):
    with pytest.raises(ValueError, match="loopback"):
        FaultProxy("https://127.0.0.1:6443", host=host)


def test_injected_errors_are_api_status_objects():
    status = msgspec.json.decode(status_body(410, "Expired", "too old resource version: 5"))
    assert status["kind"] == "Status" and status["code"] == 410 and status["reason"] == "Expired"
