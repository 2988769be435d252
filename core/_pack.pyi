# Stub of core/_pack.pyx: BurstPacking's node scans in C.
import numpy as np
import numpy.typing as npt

def best_fit(
    room: npt.NDArray[np.int64],
    need: npt.NDArray[np.int64],
    feasible: npt.NDArray[np.uint8],
    capacity: npt.NDArray[np.float64],
    prefer: npt.NDArray[np.uint8],
    among: npt.NDArray[np.int64],
) -> int: ...
def repack_runs(
    room: npt.NDArray[np.int64],
    capacity: npt.NDArray[np.float64],
    largest: npt.NDArray[np.float64],
    feasible: npt.NDArray[np.uint8],
    open_: npt.NDArray[np.uint8],
    run_need: npt.NDArray[np.int64],
    run_row: npt.NDArray[np.int64],
    run_start: npt.NDArray[np.int64],
    members: npt.NDArray[np.int64],
    out: npt.NDArray[np.int32],
    balance: bool = False,
) -> None: ...
