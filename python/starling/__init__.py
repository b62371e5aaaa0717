"""Starling for your own training loop: a node of Starling's decentralized network in this
process (libstarling, over ctypes), exchanging your model with its neighbours.

    import starling
    node = starling.Node(weights, cluster="cluster.conf", id=0, secret_key="node0.key",
                         local_steps=4, iterations=10000)
    while node.step():          # after each local step on `weights`
        ...
    node.finish()

Data: starling.shard(data, ...) gives this node's rows of a data file, as starlingd splits them
(--partition iid, label, dirichlet:ALPHA, column:K).

PyTorch: starling.torch.DecentralizedOptimizer (import starling.torch; needs torch).
"""
from .launch import launch_options, stop_on_signals
from .node import Node, StarlingError, library
from .shard import shard

__all__ = ["Node", "StarlingError", "library", "launch_options", "shard", "stop_on_signals"]
