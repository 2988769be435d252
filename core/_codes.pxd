# The reason codes the encoder and the kernels write per (pod, node), and the fixed
# ClusterState columns they read: declared once, here, for Cython (cimport) and, through
# core/_codes.pyx, for Python. core/reasons.py maps each code to its plugin and its text.
cdef enum:
    R_NONE = 0            # the node passes every filter
    R_UNSCHEDULABLE = 1   # NodeUnschedulable (static)
    R_NODE_NAME = 2       # NodeName (static)
    R_TAINT = 3           # TaintToleration (static)
    R_NODE_AFFINITY = 4   # NodeAffinity: the pod's selector/affinity (static)
    R_ENFORCED_AFFINITY = 5  # NodeAffinity: the profile's addedAffinity (static)
    R_PORTS = 6           # NodePorts (kernel)
    R_NARROWED = 7        # left out by NodeAffinity's PreFilter (metadata.name terms; static)
    R_SPREAD = 8          # PodTopologySpread: skew too large (kernel)
    R_SPREAD_LABEL = 9    # PodTopologySpread: the node lacks a topology key (kernel)
    R_IPA_AFF = 10        # InterPodAffinity: required affinity not met (kernel)
    R_IPA_ANTI = 11       # InterPodAffinity: required anti-affinity not met (kernel)
    R_IPA_EXISTING = 12   # InterPodAffinity: an existing pod's anti-affinity (kernel)
    R_EXT_FIRST = 13      # the profile's plugin filters (core/plugins: static_filter, one code
    R_EXT_LAST = 31       #   each; class_filter, one per reason), in filter order, at most 19
    R_DRA_ALLOCATE = 32   # DynamicResources: the node cannot hold the pod's claims (static)
    R_DRA_UNAVAILABLE = 33  # DynamicResources: an allocated claim is not usable here (static)
    R_DRA_TIMEOUT = 34    # DynamicResources: the allocator ran out of filterTimeout (static)
    R_FIXED = 35          # NodeResourcesFit: resource column r fails with code R_FIXED + r
    R_ABSENT = 255        # a row without a node: counted nowhere
    POD_COL = 3           # ClusterState's pods column (allocatable/requested pod counts)
