# Stub of core/_place.pyx (the burst kernel). The bundles are core/operands.py's (and the
# encoders' StaticTables and SpreadTables); their layout is declared in core/_place.pxd.
from typing import Any

import numpy.typing as npt

from kubesalvo.core.encode import StaticTables
from kubesalvo.core.operands import (
    ClassColumns,
    Outputs,
    PodColumns,
    PortConflicts,
    ScoringColumns,
)
from kubesalvo.core.spread import SpreadTables

ZONE_LIMIT: int

def set_bounded_search(
    on: bool, share: int = 16, twins: int = 32, twin_after: int = 8
) -> tuple[bool, int, int, int]: ...
def set_twin_scan(on: bool) -> bool: ...
def set_order_cache(on: bool) -> bool: ...

class BurstKernel:
    grouped_pods: int  # pods placed by group of rows (c_mode 2 without a pass over the rows)
    orders_reused: int  # group layouts that kept their slot's order from the class before
    orders_copied: int  # group layouts that copied the order kept for their signature
    bounded_pods: int  # a class's only pods placed by the bounded search
    bounded_rows: int  # the rows those searches visited
    bounded_gaveup: int  # the searches that gave up for the scan
    twin_groups: int  # twin groups its searches take as one (built with the first search)
    twin_ties: int  # tied rows those searches counted in twin groups, without a visit
    twin_scans: int  # searches that scanned the rows in no twin group instead of their cells
    twin_scanned: int  # feasible rows the scans (_scan) took their twin group's terms for
    def __init__(
        self,
        alloc: npt.NDArray[Any],
        req: npt.NDArray[Any],
        nzreq: npt.NDArray[Any],
        port_use: npt.NDArray[Any],
        settings: dict[str, int | bool],
        scoring: ScoringColumns,
        dom: npt.NDArray[Any],
        ndom: npt.NDArray[Any],
        ties: npt.NDArray[Any],
    ) -> None: ...
    def load_chunk(
        self,
        classes: ClassColumns,
        tables: StaticTables,
        ports: PortConflicts,
        spread: SpreadTables,
        pods: PodColumns,
        out: Outputs,
        nslots: int,
    ) -> None: ...
    def run(self) -> None: ...
