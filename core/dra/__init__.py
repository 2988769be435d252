"""Dynamic Resource Allocation (resource.k8s.io/v1): the objects DynamicResources reads,
as a plain snapshot (``objects``), and the allocation of a pod's claims from them."""
