"""The Ethernet backend: multi-plane RoCE switches running FRR (simulated in network namespaces, or real ones over SSH); `backend.py` is its face to the commands."""
