"""What a machine is, from its env record: its name, how it is virtualized, and its key."""

from __future__ import annotations

import json

from ctxbench.records.environment import Environment, Sandbox

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


def virtualization_text(env: Environment) -> str | None:
    """'KVM guest', 'KVM guest, in docker', 'WSL', 'bare metal'; None when unknown."""
    virt = env.virtualization
    if virt.wsl:
        return "WSL"
    vendor = (virt.hypervisor_vendor or "").strip()
    detected = virt.detected or "unknown"
    container = virt.container or (
        virt.systemd_detect_virt
        if virt.systemd_detect_virt in ("docker", "podman", "lxc", "lxc-libvirt", "wsl")
        else None
    )
    if vendor:
        text = f"{HYPERVISORS.get(vendor, vendor)} guest"
    elif virt.hypervisor_bit:
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


def machine_name(env: Environment) -> str:
    """What a machine is: 'vm · Intel(R) Xeon(R) Processor · KVM guest, in docker'."""
    cpu = env.cpu_model or "unknown CPU"
    parts = [env.hostname or "?", " ".join(str(cpu).split())]
    virt = virtualization_text(env)
    if virt:
        parts.append(virt)
    return " · ".join(parts)


def machine_key(env: Environment) -> tuple[str, ...]:
    """(host, CPU model, kernel release, what of the sandbox changes a figure, as JSON).

    What a machine is for its history of runs: the env's ``sandbox`` block
    counts (a seccomp filter or a tracer changes every system call); run
    options (--quick, samples, batch time, repeats) do not: they change how
    sure a figure is, not what it measures."""
    return (
        str(env.hostname),
        str(env.cpu_model),
        str(env.kernel_release),
        json.dumps(sandbox_key(env.sandbox), sort_keys=True),
    )


def sandbox_key(sandbox: Sandbox | None) -> dict[str, object] | None:
    """What of the sandbox block changes a figure: the seccomp mode and filters,
    being traced, auditing, tracepoints recording; not the pids, the count of
    events enabled or where tracefs is mounted."""
    if sandbox is None:
        return None
    return {
        "seccomp": [sandbox.seccomp_mode, sandbox.seccomp_filters],
        "traced": sandbox.traced,
        "audit": [sandbox.audit_state, sandbox.audit_rules],
        "tracepoints_recording": sandbox.tracepoints_recording,
    }
