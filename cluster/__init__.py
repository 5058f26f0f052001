"""Scale-out: shards by rendezvous hashing, the NATS fan-in, attached viewers, union history.

Submodules import nats-py only where they talk to NATS, so ``cluster.shards``
stays cheap for the config and ``gpufleet check``.
"""
