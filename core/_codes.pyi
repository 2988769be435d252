# Stub of core/_codes.pyx: the reason codes and fixed columns of core/_codes.pxd.
NONE: int
UNSCHEDULABLE: int
NODE_NAME: int
TAINT: int
NODE_AFFINITY: int
ENFORCED_AFFINITY: int
PORTS: int
NARROWED: int
SPREAD: int
SPREAD_LABEL: int
IPA_AFFINITY: int
IPA_ANTI: int
IPA_EXISTING: int
FIRST_RESOURCE: int
ABSENT: int
POD_COLUMN: int
