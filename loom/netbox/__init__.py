"""NetBox as the source of truth (docs/netbox.md): the fabric's sites, racks, device types,
devices, interfaces, cables and RoCE addressing pushed to NetBox with plan/apply, and the floor
as NetBox records it (cable and device status, serials, GUIDs, MACs) brought back by import.

    intent.py    fabric → the objects Loom owns, by kind and natural key (no network)
    client.py    the pynetbox connection: URL/token from the environment, errors, rate limits
    state.py     what NetBox holds, read with only the compared fields
    plan.py      intent vs state → create / change / delete / conflict
    apply.py     a plan carried out with bulk calls in dependency order
    asbuilt.py   NetBox → the lock file's as-built entries and assets
    commands.py  `loom netbox plan|apply|import`
"""
