"""Which OpenSM QoS options a fabric gets, and what every port must then hold.

OpenSM with `qos FALSE` never touches SL2VL/VLArb tables, so once loom has programmed QoS,
"QoS off" cannot be `qos FALSE`: the classes would stay on every port.  Off is then written
explicitly — every SL on VL0, VL0 alone in the low-priority table, the high table empty — and
verified like any other QoS.  A fabric that never had QoS keeps `qos FALSE` (nothing to read back).
"""

from __future__ import annotations

import re

from loom.render.opensm_qos import opensm_qos_conf
from loom.render.templates import render

UNMANAGED = "qos FALSE\n"


def qos_on(conf: str) -> bool:
    return bool(re.search(r"^qos TRUE\b", conf, re.M))


def off_conf(fabric_name: str) -> str:
    return render("opensm/qos.conf.j2", fabric=fabric_name, summary="none (QoS off: every SL on VL0)", max_vls=1,
                  high_limit=0, vlarb_high="0:0", vlarb_low="0:255", sl2vl=",".join(["0"] * 16))


def desired_conf(fabric_name: str, qos, previous_conf: str, options: str = "") -> str:
    """The options for the model's QoS plan `qos` (None: no classes), given what OpenSM has now,
    and the model's other OpenSM `options` (`opensm_qos.sm_options`)."""
    if qos is not None:
        return opensm_qos_conf(fabric_name, qos) + options
    return (off_conf(fabric_name) if qos_on(previous_conf) else UNMANAGED) + options


def restore_conf(fabric_name: str, previous_conf: str, desired: str) -> str:
    """The options that put back the QoS a fabric had before an apply: its previous options,
    or explicit off when it had none and the apply turned QoS on."""
    if not qos_on(previous_conf) and qos_on(desired):
        return off_conf(fabric_name)
    return previous_conf


def conf_intent(conf: str) -> dict | None:
    """What every port holds once OpenSM ran with `conf`: {"sl2vl": [16 VLs], "vlarb_low":
    [[vl, weight], ...] without zero weights} (the high table is always empty); None without QoS."""
    if not qos_on(conf):
        return None
    opts = dict(re.findall(r"^(qos_sl2vl|qos_vlarb_low) (\S+)$", conf, re.M))
    low = [[int(v), int(w)] for v, w in (e.split(":") for e in opts["qos_vlarb_low"].split(","))]
    return {"sl2vl": [int(x) for x in opts["qos_sl2vl"].split(",")], "vlarb_low": [e for e in low if e[1]]}
