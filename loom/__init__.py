"""Loom: one declarative fabric model -> routing, QoS, host settings, checks, pushed configs."""

__version__ = "0.1.0"
