"""DynamicResources' runtime half: which devices the DeviceBook still holds for the pods it
reserved, against the claims the informer shows. (Its PreBind and Unreserve are tested
on the real API server in tests/sched/test_informers_resources.py and, against
kube-scheduler, tests/sched/test_run_devices_upstream.py.)"""

from __future__ import annotations

from typing import Any

from kubesalvo.core.dra.objects import DraObjects
from kubesalvo.core.dra.pod import Reserved
from kubesalvo.sched.devices import DeviceBook

GPU = ("gpu.example.com", "node-a", "gpu-0")


def claim(name: str, allocated: bool) -> dict[str, Any]:
    status: dict[str, Any] = {}
    if allocated:
        result = {"driver": GPU[0], "pool": GPU[1], "device": GPU[2], "request": "gpu"}
        status["allocation"] = {"devices": {"results": [result]}}
    return {"metadata": {"namespace": "ns", "name": name, "uid": f"uid-{name}"}, "status": status}


def objects(*claims: dict[str, Any]) -> DraObjects:
    return DraObjects(claims={("ns", c["metadata"]["name"]): c for c in claims})


def book_with(reserved_claim: dict[str, Any]) -> DeviceBook:
    book = DeviceBook(client=None, objects=DraObjects)  # type: ignore[arg-type]
    allocation = {"devices": {"results": []}}
    book._reserved["pod-uid"] = Reserved("node-a", [(reserved_claim, allocation)], frozenset({GPU}))
    return book


def test_a_reservation_not_yet_written_holds_its_devices():
    book = book_with(claim("c", allocated=False))
    held, pending = book._held(objects(claim("c", allocated=False)))
    assert held == {GPU} and pending == {"uid-c"}


def test_a_written_reservation_ends_once_the_informer_shows_the_allocation():
    book = book_with(claim("c", allocated=False))
    book._written.add("pod-uid")
    held, _ = book._held(objects(claim("c", allocated=True)))
    assert held == {GPU}  # held now by the claim's own allocation
    assert "pod-uid" not in book._reserved


def test_a_written_reservation_whose_claim_was_deleted_holds_nothing():
    """The pod was bound and deleted before any later pod looked: its claim is gone (the
    claim controller deleted it), so its devices must be free, not held for good."""
    book = book_with(claim("c", allocated=False))
    book._written.add("pod-uid")
    held, pending = book._held(objects())
    assert held == set() and pending == set()
    assert "pod-uid" not in book._reserved


def test_an_unwritten_reservation_whose_claim_is_not_seen_yet_still_holds():
    book = book_with(claim("c", allocated=False))
    held, pending = book._held(objects())
    assert held == {GPU} and pending == {"uid-c"}
