"""Stage 4: traffic classes → SL/VL/arbitration (InfiniBand) and DSCP/PFC/ECN/ETS (RoCE)."""

from .plan import ClassQos, QosPlan, plan_qos


def fabric_qos(model) -> QosPlan | None:
    """The classes a fabric runs: the model's; on Ethernet without `qos:`, the lossless RoCE
    defaults the configs carry (`loom.qos.lossless.DEFAULT_CLASSES`), so `loom check` proves
    their priorities free of PFC deadlock too."""
    if model.technology != "ethernet":
        return plan_qos(model)
    from .lossless import roce_plan

    return roce_plan(model)


__all__ = ["ClassQos", "QosPlan", "fabric_qos", "plan_qos"]
