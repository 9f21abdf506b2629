"""What a machine is, from its env record: its name, how it is virtualized, and its key."""

from __future__ import annotations

import json
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


def machine_key(env: dict[str, Any]) -> tuple[str, ...]:
    """(host, CPU model, kernel release, what of the sandbox changes a figure, as JSON).

    What a machine is for its history of runs: the env's ``sandbox`` block
    counts (a seccomp filter or a tracer changes every system call); run
    options (--quick, samples, batch time, repeats) do not: they change how
    sure a figure is, not what it measures."""
    cpu = env.get("cpu") or {}
    kernel = env.get("kernel") or {}
    return (
        str(env.get("hostname")),
        str(cpu.get("model")),
        str(kernel.get("release")),
        json.dumps(sandbox_key(env.get("sandbox")), sort_keys=True),
    )


def sandbox_key(sandbox: dict[str, Any] | None) -> dict[str, Any] | None:
    """What of the sandbox block changes a figure: the seccomp mode and filters,
    being traced, auditing, tracepoints recording; not the pids, the count of
    events enabled or where tracefs is mounted."""
    if not sandbox:
        return sandbox
    seccomp = sandbox.get("seccomp") or {}
    audit = sandbox.get("audit") or {}
    return {
        "seccomp": [seccomp.get("mode"), seccomp.get("filters")],
        "traced": sandbox.get("traced"),
        "audit": [audit.get("state"), audit.get("rules")],
        "tracepoints_recording": (sandbox.get("tracepoints") or {}).get("recording"),
    }
