"""``kubesalvo image-reporter``: a node agent that writes the node's images into its Node.

Where the kubelet reports no images (``status.images`` empty, as on kwok nodes and some
managed clusters), ImageLocality has nothing to score. This agent, run by a DaemonSet,
lists the node's images through the container runtime (``crictl``, see ``crictl``) and
patches its own Node's ``kubesalvo.io/images`` annotation (format: ``core/plugins/
image_locality.py``) whenever that list changes (``agent``). ``cli`` is the command.
"""
