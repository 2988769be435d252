# The reason codes and fixed columns of core/_codes.pxd, as Python ints (one declaration
# for both sides; see that file for what each code means).
# cython: language_level=3

# (A .pyx sees the declarations of its own .pxd without a cimport.)

NONE = R_NONE
UNSCHEDULABLE = R_UNSCHEDULABLE
NODE_NAME = R_NODE_NAME
TAINT = R_TAINT
NODE_AFFINITY = R_NODE_AFFINITY
ENFORCED_AFFINITY = R_ENFORCED_AFFINITY
PORTS = R_PORTS
NARROWED = R_NARROWED
SPREAD = R_SPREAD
SPREAD_LABEL = R_SPREAD_LABEL
IPA_AFFINITY = R_IPA_AFF
IPA_ANTI = R_IPA_ANTI
IPA_EXISTING = R_IPA_EXISTING
EXTENSION_FIRST = R_EXT_FIRST
EXTENSION_LAST = R_EXT_LAST
FIRST_RESOURCE = R_FIXED
ABSENT = R_ABSENT
POD_COLUMN = POD_COL
