"""What a machine is, from its env record: its name, and how it is virtualized."""

from __future__ import annotations

from typing import Any

# CPUID hypervisor vendor strings, as the env record carries them.
HYPERVISORS = {
    "KVMKVMKVM": "KVM",
    "Microsoft Hv": "Hyper-V",
    "VMwareVMware": "VMware",
    "XenVMMXenVMM": "Xen",
    "TCGTCGTCGTCG": "QEMU (TCG)",
    "ACRNACRNACRN": "ACRN",
    "bhyve bhyve": "bhyve",
}


def virtualization_text(env: dict[str, Any]) -> str | None:
    """'KVM guest', 'KVM guest, in docker', 'WSL', 'bare metal'; None when unknown."""
    virt = env.get("virtualization") or {}
    if virt.get("wsl"):
        return "WSL"
    vendor = (virt.get("hypervisor_vendor") or "").strip()
    detected = virt.get("detected") or "unknown"
    container = virt.get("container") or (
        virt.get("systemd_detect_virt")
        if virt.get("systemd_detect_virt") in ("docker", "podman", "lxc", "lxc-libvirt", "wsl")
        else None
    )
    if vendor:
        text = f"{HYPERVISORS.get(vendor, vendor)} guest"
    elif virt.get("hypervisor_bit"):
        text = "VM guest"
    elif detected == "none":
        text = "bare metal"
    elif detected not in ("unknown", container):
        text = f"{detected} guest"
    else:
        text = None
    if container:
        text = f"{text}, in {container}" if text else f"in {container}"
    return text


def machine_name(env: dict[str, Any]) -> str:
    """What a machine is: 'vm · Intel(R) Xeon(R) Processor · KVM guest, in docker'."""
    cpu = (env.get("cpu") or {}).get("model") or "unknown CPU"
    parts = [env.get("hostname") or "?", " ".join(str(cpu).split())]
    virt = virtualization_text(env)
    if virt:
        parts.append(virt)
    return " · ".join(parts)
