"""The numpy dtypes that match the C types of core/_typedefs.pxd (checked by a test)."""

import numpy as np

QUANTITY = np.dtype(np.int64)  # quantity_t
NODE = np.dtype(np.int32)  # node_t
MASK = np.dtype(np.uint8)  # mask_t
BITS = np.dtype(np.uint64)  # bits_t
SCORE = np.dtype(np.int64)  # score_t
