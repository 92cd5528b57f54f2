"""Drift planted directly on a switch, behind OpenSM's back: one LFT entry or one port's VLArb
weight set by SMP (libibmad smp_set_via), as a person with `ibsim`/MAD access would.

Run with the simulator's environment: `python tests/smp_set.py lft PATH LID PORT`,
`python tests/smp_set.py vlarb PATH OUTPORT VL WEIGHT` or `python tests/smp_set.py pkey PATH
PORT INDEX VALUE` (one P_Key table entry; PORT 0 for a CA) (PATH: directed route "0,1,2")."""

from __future__ import annotations

import ctypes
import sys

from loom.fabrics.infiniband.madquery import ATTR_PKEYS, ATTR_VLARB, TIMEOUT_MS, Mad, PortId

ATTR_LFT = 0x19


def _portid(mad: Mad, path: str) -> PortId:
    pid = PortId()
    if mad.lib.str2drpath(ctypes.byref(pid.drpath), path.encode(), 0, 0) < 0:
        raise SystemExit(f"bad path {path}")
    return pid


def set_block(mad: Mad, path: str, attr: int, mod: int, edit) -> None:
    buf = ctypes.create_string_buffer(mad.query(path, attr, mod), 64)
    edit(buf)
    mad.lib.smp_set_via.restype = ctypes.c_void_p
    mad.lib.smp_set_via.argtypes = [ctypes.c_void_p, ctypes.POINTER(PortId), ctypes.c_uint, ctypes.c_uint,
                                    ctypes.c_uint, ctypes.c_void_p]
    if not mad.lib.smp_set_via(buf, ctypes.byref(_portid(mad, path)), attr, mod, TIMEOUT_MS, mad.port):
        raise SystemExit(f"set failed on {path}")


def main(argv: list[str]) -> None:
    mad = Mad()
    if argv[0] == "pkey":
        path, port, index, value = argv[1], int(argv[2]), int(argv[3]), int(argv[4], 16)
        set_block(mad, path, ATTR_PKEYS, port << 16, lambda b: b.__setitem__(slice(2 * index, 2 * index + 2),
                                                                               value.to_bytes(2, "big")))
    elif argv[0] == "lft":
        path, lid, port = argv[1], int(argv[2]), int(argv[3])
        set_block(mad, path, ATTR_LFT, lid // 64, lambda b: b.__setitem__(lid % 64, bytes([port])))
    else:
        path, out, vl, weight = argv[1], int(argv[2]), int(argv[3]), int(argv[4])

        def edit(b):
            for i in range(32):
                if b.raw[2 * i] & 0xF == vl and b.raw[2 * i + 1]:
                    b[2 * i + 1] = bytes([weight])
                    return
        set_block(mad, path, ATTR_VLARB, (1 << 16) | out, edit)


if __name__ == "__main__":
    main(sys.argv[1:])
