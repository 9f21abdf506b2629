"""Whether a run ran in a virtual machine, and under what: facts from its env record.

A switch in a guest pays what the hypervisor adds (the exits on interrupts,
a halted vCPU's wake-up by the host, steal time) or, under an emulator, the
translation of every instruction. ``show``'s Why and the report say, for a
guest, what the run measured of that (its steal time, the idle wake-up
share across CPUs where an idle driver acts) and what it could not; these
are the facts they word.
"""

from __future__ import annotations

from dataclasses import dataclass

from ctxbench.records.environment import Environment

CONTAINERS = ("docker", "podman", "lxc", "container", "wsl", "none")
EMULATOR_VENDORS = ("TCGTCGTCGTCG",)  # envparts.EMULATOR_VENDORS
# The CPUID hypervisor vendor strings, by the name systemd-detect-virt gives them.
VENDORS = {
    "KVMKVMKVM": "kvm",
    "TCGTCGTCGTCG": "qemu",
    "Microsoft Hv": "microsoft",
    "VMwareVMware": "vmware",
    "XenVMMXenVMM": "xen",
    "ACRNACRNACRN": "acrn",
    "bhyve bhyve": "bhyve",
}


@dataclass(frozen=True)
class Guest:
    hypervisor: str  # 'kvm', 'qemu': virtualization.detected, else the CPUID vendor
    vendor: str | None  # the CPUID hypervisor vendor ('KVMKVMKVM', 'TCGTCGTCGTCG')
    emulated: bool  # an emulator (QEMU TCG) translates every instruction
    cpuidle_driver: str | None  # None: not recorded; 'none': no driver acts
    cpus: int | None  # logical CPUs the guest has


def guest_of(env: Environment) -> Guest | None:
    """The run's virtual machine, or None where its env shows none (bare
    metal, or a container on it)."""
    virt = env.virtualization
    vendor = virt.hypervisor_vendor
    detected = virt.detected
    if not vendor and (not detected or detected in CONTAINERS):
        return None
    hypervisor = (
        detected
        if detected and detected not in CONTAINERS
        else VENDORS.get(str(vendor).strip(), str(vendor))
    )
    return Guest(
        hypervisor=hypervisor,
        vendor=vendor,
        emulated=vendor in EMULATOR_VENDORS or "TCG" in env.cpu_model.split(),
        cpuidle_driver=env.idle_driver,
        cpus=env.cpu_logical,
    )
