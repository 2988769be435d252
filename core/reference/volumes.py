"""The scope of the reference: pods without the volumes and claims it does not model.

kube-scheduler's volume filters (VolumeRestrictions, NodeVolumeLimits, VolumeBinding,
VolumeZone) and DynamicResources only act on pods with persistent volume claims,
generic ephemeral volumes, CSI or cloud-disk volumes, or resource claims; on every
other pod they admit every node. The reference does not model PersistentVolumes,
StorageClasses, CSINodes or ResourceSlices, so it refuses such pods instead of
guessing.
"""

from __future__ import annotations

from kubesalvo.core.reference.framework import Pod, PodInvalid

# Volume sources one of those filters inspects.
UNMODELLED_VOLUME_SOURCES = frozenset(
    {
        "persistentVolumeClaim",
        "ephemeral",
        "csi",
        "gcePersistentDisk",
        "awsElasticBlockStore",
        "rbd",
        "iscsi",
    }
)


def check_in_scope(pod: Pod) -> None:
    """Raise PodInvalid for a pod the volume or DynamicResources filters would inspect."""
    spec = pod.get("spec") or {}
    for volume in spec.get("volumes") or ():
        kinds = UNMODELLED_VOLUME_SOURCES.intersection(volume)
        if kinds:
            kind = sorted(kinds)[0]
            raise PodInvalid(
                f"volume {volume.get('name')!r} uses {kind}: not modelled by the reference"
            )
    if spec.get("resourceClaims"):
        raise PodInvalid("resource claims (DynamicResources) are not modelled by the reference")
