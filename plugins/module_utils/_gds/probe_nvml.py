# -*- coding: utf-8 -*-
# Copyright (c) gpudirect.storage contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""NVML inventory of the cuFile probe child (GPU names, UUIDs, PCI bus ids, BAR1). PRIVATE.

Part of the probe PROGRAM: ``_gds/probe_child.probe_source`` concatenates probe_nvml,
probe_io and probe into the one source the child runs (``python -c``), dropping their
``from __future__`` and collection import lines. So: standard library only, no relative
imports, and names that do not clash with the other parts.
"""

from __future__ import annotations

import ctypes


def _cstr(buf):
    return buf.value.decode("utf-8", "replace")


# ---------------------------------------------------------------------------------------------
# NVML (libnvidia-ml) inventory

class _PciInfo(ctypes.Structure):
    _fields_ = [("busIdLegacy", ctypes.c_char * 16), ("domain", ctypes.c_uint), ("bus", ctypes.c_uint),
                ("device", ctypes.c_uint), ("pciDeviceId", ctypes.c_uint), ("pciSubSystemId", ctypes.c_uint),
                ("busId", ctypes.c_char * 32)]


class _Bar1(ctypes.Structure):
    _fields_ = [("total", ctypes.c_ulonglong), ("free", ctypes.c_ulonglong), ("used", ctypes.c_ulonglong)]


def nvml_inventory(lib):
    """GPUs as NVML sees them; {"error": ...} when NVML cannot be used."""
    try:
        nv = ctypes.CDLL(lib)
    except OSError as exc:
        return {"error": "cannot load %s: %s" % (lib, exc)}

    def errstr(rc):
        try:
            nv.nvmlErrorString.restype = ctypes.c_char_p
            return "%s (%d)" % (nv.nvmlErrorString(rc).decode("utf-8", "replace"), rc)
        except (AttributeError, ValueError):
            return "NVML error %d" % rc

    init = getattr(nv, "nvmlInit_v2", None) or nv.nvmlInit
    rc = init()
    if rc:
        return {"error": "nvmlInit failed: %s" % errstr(rc)}
    out = {"gpus": []}
    try:
        buf = ctypes.create_string_buffer(96)
        if nv.nvmlSystemGetDriverVersion(buf, 96) == 0:
            out["driver_version"] = _cstr(buf)
        ver = ctypes.c_int(0)
        fn = getattr(nv, "nvmlSystemGetCudaDriverVersion_v2", None) or getattr(nv, "nvmlSystemGetCudaDriverVersion", None)
        if fn is not None and fn(ctypes.byref(ver)) == 0:
            out["cuda_driver_version"] = ver.value
        count = ctypes.c_uint(0)
        rc = (getattr(nv, "nvmlDeviceGetCount_v2", None) or nv.nvmlDeviceGetCount)(ctypes.byref(count))
        if rc:
            out["error"] = "nvmlDeviceGetCount failed: %s" % errstr(rc)
            return out
        by_index = getattr(nv, "nvmlDeviceGetHandleByIndex_v2", None) or nv.nvmlDeviceGetHandleByIndex
        for i in range(count.value):
            handle = ctypes.c_void_p()
            rc = by_index(ctypes.c_uint(i), ctypes.byref(handle))
            if rc:
                out["gpus"].append({"index": i, "error": errstr(rc)})
                continue
            gpu = {"index": i}
            name = ctypes.create_string_buffer(96)
            if nv.nvmlDeviceGetName(handle, name, 96) == 0:
                gpu["name"] = _cstr(name)
            uuid = ctypes.create_string_buffer(96)
            if nv.nvmlDeviceGetUUID(handle, uuid, 96) == 0:
                gpu["uuid"] = _cstr(uuid)
            pci = _PciInfo()
            fn = getattr(nv, "nvmlDeviceGetPciInfo_v3", None) or getattr(nv, "nvmlDeviceGetPciInfo_v2", None)
            if fn is not None and fn(handle, ctypes.byref(pci)) == 0:
                gpu["pci_bus_id"] = pci.busId.decode("ascii", "replace")
            bar1 = _Bar1()
            if nv.nvmlDeviceGetBAR1MemoryInfo(handle, ctypes.byref(bar1)) == 0:
                gpu["bar1_total_mib"] = bar1.total // (1 << 20)
            mem = _Bar1()  # nvmlMemory_t has the same three fields (total, free, used)
            if nv.nvmlDeviceGetMemoryInfo(handle, ctypes.byref(mem)) == 0:
                gpu["fb_total_mib"] = mem.total // (1 << 20)
            out["gpus"].append(gpu)
    finally:
        nv.nvmlShutdown()
    return out
