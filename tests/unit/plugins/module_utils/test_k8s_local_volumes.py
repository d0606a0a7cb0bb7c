# -*- coding: utf-8 -*-
# Copyright (c) gpudirect.storage contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""_k8s/local_volumes: which probe paths become local PVs, their names, and what a run does to an
existing StorageClass or PV (create, patch, keep, refuse)."""

from __future__ import annotations

import re

from ansible_collections.gpudirect.storage.plugins.module_utils._k8s import local_volumes as lv

NVME = {"path": "/mnt/nvme0", "mount_point": "/mnt/nvme0", "fstype": "xfs", "block_device": "nvme0n1",
        "exists": True, "size_bytes": 3840755982336, "free_bytes": 10, "class": {"kind": "nvme", "gds_capable": True}}


def _facts(*paths, **auto):
    return {"storage": {"probe_paths": list(paths), "auto": auto or None}}


def test_only_nvme_data_mounts_become_volumes_with_the_file_system_size():
    root = dict(NVME, path="/var/tmp", mount_point="/")
    lustre = dict(NVME, path="/lustre", fstype="lustre", **{"class": {"kind": "distributed", "gds_capable": True}})
    loop = dict(NVME, path="/mnt/gds", **{"class": {"kind": "loop", "gds_capable": False, "reason": "a loop device"}})
    volumes, left = lv.volumes_from_facts({"gpu-b": _facts(NVME, root, lustre, loop), "gpu-a": {}})
    assert volumes == [{"node": "gpu-b", "path": "/mnt/nvme0", "capacity": "3576Gi",
                        "source": "gds_facts: xfs on nvme0n1 (nvme)"}]
    assert [(x["node"], x["path"]) for x in left] == [
        ("gpu-a", None), ("gpu-b", "/var/tmp"), ("gpu-b", "/lustre"), ("gpu-b", "/mnt/gds")]
    assert "root file system" in left[1]["why"] and "not a node-local volume" in left[2]["why"]
    assert left[3]["why"] == "a loop device"


def test_names_are_dns_labels_unique_per_node_and_path():
    long_node = "GPU_Node." + "x" * 80
    names = {lv.pv_name("nvme-gds", n, p) for n in ("gpu-a", "gpu-b", long_node) for p in ("/a", "/b")}
    assert len(names) == 6
    assert all(re.match(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$", n) and len(n) <= 63 for n in names), names


def test_capacity_is_rounded_down():
    assert lv.capacity_text((1 << 30) * 5 - 1) == "4Gi" and lv.capacity_text(300 << 20) == "300Mi"
    assert lv.capacity_text(1) == "1Mi"


def test_a_pv_not_ours_is_refused_ours_is_patched_only_where_it_differs():
    want = lv.pv_body("nvme-gds", {"node": "gpu-a", "path": "/mnt/nvme0", "capacity": "2Gi"}, "gpu-a")
    assert lv.plan_pv(None, want) == ("create", None)
    theirs = dict(want, metadata=dict(want["metadata"], labels={}))
    action, why = lv.plan_pv(theirs, want)
    assert action == "refuse" and "was not created by this module" in why and want["metadata"]["name"] in why
    assert lv.plan_pv(want, want) == ("keep", None)
    smaller = dict(want, spec=dict(want["spec"], capacity={"storage": "1Gi"}))
    assert lv.plan_pv(smaller, want) == ("patch", {"spec": {"capacity": {"storage": "2Gi"}}})
    moved = dict(want, spec=dict(want["spec"], local={"path": "/elsewhere"}))
    assert lv.plan_pv(moved, want)[0] == "refuse"
    assert lv.view(lv.patched(smaller, {"spec": {"capacity": {"storage": "2Gi"}}})) == lv.view(want)


def test_a_storage_class_is_used_when_it_binds_the_same_way():
    want = lv.storage_class_body("nvme-gds")
    assert lv.plan_class(None, want) == ("create", None)
    theirs = {"metadata": {"name": "nvme-gds"}, "provisioner": lv.NO_PROVISIONER, "volumeBindingMode": "WaitForFirstConsumer"}
    assert lv.plan_class(theirs, want) == ("keep", None)
    action, why = lv.plan_class(dict(theirs, volumeBindingMode="Immediate"), want)
    assert action == "refuse" and "volumeBindingMode=Immediate" in why


def test_bad_volumes_are_named():
    ok = {"node": "gpu-a", "path": "/mnt/nvme0", "capacity": "1Ti"}
    assert lv.check("nvme-gds", [ok]) is None
    assert lv.check("NVMe", [ok]).startswith("storage_class 'NVMe' is not a valid name")
    assert lv.check("nvme-gds", [dict(ok, path="/a/../b")]).startswith("volumes[0].path")
    assert lv.check("nvme-gds", [ok, dict(ok, capacity="lots")]).startswith("volumes[1].capacity 'lots'")
