"""Stage 4: traffic classes → SL/VL/arbitration (InfiniBand) and DSCP/PFC/ECN/ETS (RoCE)."""

from .plan import ClassQos, QosPlan, plan_qos

__all__ = ["ClassQos", "QosPlan", "plan_qos"]
