"""The InfiniBand backend: OpenSM subnet managers (ibsim + OpenSM simulated, or real ones over SSH), static LFTs, SL2VL/VLArb QoS; `backend.py` is its face to the commands."""
