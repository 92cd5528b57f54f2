"""Drift planted directly on a switch, behind OpenSM's back: one LFT entry or one port's VLArb
weight set by SMP (a directed-route Get, edited, then Set), as a person with `ibsim`/MAD access would.

Run with the simulator's environment: `python tests/smp_set.py lft PATH LID PORT`,
`python tests/smp_set.py vlarb PATH OUTPORT VL WEIGHT` or `python tests/smp_set.py pkey PATH
PORT INDEX VALUE` (one P_Key table entry; PORT 0 for a CA) (PATH: directed route "0,1,2")."""

from __future__ import annotations

import sys

from loom.fabrics.infiniband.madquery import ATTR_LFT, ATTR_PKEYS, ATTR_VLARB, SMP, Port


def one(port: Port, ask: tuple) -> bytes:
    [raw] = port.exchange([port.build(ask)])
    if isinstance(raw, str):
        raise SystemExit(raw)
    return raw


def set_block(port: Port, path: str, attr: int, mod: int, edit) -> None:
    block = bytearray(one(port, (SMP, path, attr, mod)))
    edit(block)
    one(port, (SMP, path, attr, mod, bytes(block)))


def main(argv: list[str]) -> None:
    port = Port()
    if argv[0] == "pkey":
        path, number, index, value = argv[1], int(argv[2]), int(argv[3]), int(argv[4], 16)
        set_block(port, path, ATTR_PKEYS, number << 16,
                  lambda b: b.__setitem__(slice(2 * index, 2 * index + 2), value.to_bytes(2, "big")))
    elif argv[0] == "lft":
        path, lid, out = argv[1], int(argv[2]), int(argv[3])
        set_block(port, path, ATTR_LFT, lid // 64, lambda b: b.__setitem__(lid % 64, out))
    else:
        path, out, vl, weight = argv[1], int(argv[2]), int(argv[3]), int(argv[4])

        def edit(b):
            for i in range(32):
                if b[2 * i] & 0xF == vl and b[2 * i + 1]:
                    b[2 * i + 1] = weight
                    return
        set_block(port, path, ATTR_VLARB, (1 << 16) | out, edit)


if __name__ == "__main__":
    main(sys.argv[1:])
