"""Filters of the opensm role: Loom's renderer of a subnet-manager host's files
(`loom.render.sm_host`), so the role installs exactly what `loom apply --target ssh` writes.
Run Ansible from Loom's virtualenv (`.venv/bin/ansible-playbook`) so `loom` is importable."""

from __future__ import annotations

from ansible.errors import AnsibleFilterError


def _sm_host():
    try:
        from loom.render import sm_host
    except ImportError as exc:
        raise AnsibleFilterError(f"the opensm role needs loom importable ({exc}): run Loom's "
                                 ".venv/bin/ansible-playbook") from None
    return sm_host


def loom_opensm_conf(site_text: str, paths: dict, priority: int, qos_options: str) -> str:
    """The options file: the site's settings kept, Loom's keys in Loom's block."""
    m = _sm_host()
    return m.merge(site_text, m.managed_block(m.SmPaths(**paths), int(priority), qos_options))


def loom_opensm_unit(paths: dict) -> str:
    m = _sm_host()
    return m.unit(m.SmPaths(**paths))


def loom_watch_unit(spec: dict) -> str:
    m = _sm_host()
    return m.watch_unit(m.WatchUnit(**spec))


class FilterModule:
    def filters(self):
        return {"loom_opensm_conf": loom_opensm_conf, "loom_opensm_unit": loom_opensm_unit,
                "loom_watch_unit": loom_watch_unit}
