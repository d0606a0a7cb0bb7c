# -*- coding: utf-8 -*-
# Copyright (c) gpudirect.storage contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""gpudirect.storage.gds_local_volumes end to end: gds_facts (probe_path: auto) discovers the data
mounts of two fake GPU hosts, then the module creates the StorageClass and one local PV per
GDS-capable mount on the API emulator - idempotent, check mode and diff, foreign PVs refused.
"""

from __future__ import annotations

import json
import os
import sys

from np_cluster import cluster_factory, standin_libs  # noqa: F401  pylint: disable=unused-import

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(HERE)))
sys.path.insert(0, os.path.join(ROOT, "build", "collections"))
from ansible_collections.gpudirect.storage.plugins.module_utils._k8s import local_volumes as lv  # noqa: E402
from cuda_standin import standin  # noqa: E402  pylint: disable=wrong-import-order

PLAYBOOK = os.path.join(HERE, "playbooks", "local_volumes.yml")
TASK = "Run gpudirect.storage.gds_local_volumes"
WRITES = ("POST", "PUT", "PATCH", "DELETE")


def fake_gpu_host(base, mounts):
    """A fake host root whose /proc/self/mounts is ``mounts`` [(device, dir, fstype)] (each dir
    created; its block device known to /sys/block): the GPUDIRECT_* environment of its gds_facts."""
    host, proc = standin.fake_host(base)
    lines = ["/dev/vda / ext4 rw 0 0", "tmpfs /dev/shm tmpfs rw 0 0"]
    for device, path, fstype in mounts:
        os.makedirs(path, exist_ok=True)
        os.makedirs(os.path.join(proc, "sys/block", os.path.basename(device)), exist_ok=True)
        lines.append("%s %s %s rw,relatime 0 0" % (device, path, fstype))
    with open(os.path.join(proc, "proc/self/mounts"), "w") as handle:
        handle.write("\n".join(lines) + "\n")
    return {"GPUDIRECT_HOST_ROOT": host, "GPUDIRECT_PROC_ROOT": proc}


def setup(cluster):
    tmp = cluster.tmp
    data = {"gpu-a": os.path.join(tmp, "gpu-a", "mnt", "nvme1"), "gpu-b": os.path.join(tmp, "gpu-b", "mnt", "nvme0")}
    loop = os.path.join(tmp, "gpu-a", "mnt", "scratch")
    envs = {"gpu-a": fake_gpu_host(os.path.join(tmp, "gpu-a"),
                                   [("/dev/nvme1n1", data["gpu-a"], "xfs"), ("/dev/loop0", loop, "ext4")]),
            "gpu-b": fake_gpu_host(os.path.join(tmp, "gpu-b"), [("/dev/nvme0n1", data["gpu-b"], "ext4")])}
    inventory = os.path.join(tmp, "inventory.json")
    with open(inventory, "w") as handle:
        json.dump({"gpu_hosts": {"hosts": dict((h, {"lv_host_env": env, "ansible_python_interpreter": sys.executable})
                                               for h, env in envs.items())},
                   "all": {"hosts": {"localhost": {"ansible_connection": "local"}}}}, handle)
    return data, loop, inventory


def run(cluster, inventory, check=False, diff=False, **extra):
    extra.setdefault("np_kubeconfig", cluster.emu.kubeconfig)
    return cluster.run(PLAYBOOK, extra, check=check, inventory=inventory, task=TASK, diff=diff)


def writes(cluster):
    return [r for r in cluster.emu.requests() if r["method"] in WRITES]


def read(cluster, kind, name):
    from kubernetes import client
    api = cluster.core().api_client
    if kind == "pv":
        return json.loads(client.CoreV1Api(api).read_persistent_volume(name, _preload_content=False).data)
    return json.loads(client.StorageV1Api(api).read_storage_class(name, _preload_content=False).data)


def test_class_and_local_pvs_from_discovered_mounts(cluster_factory):
    cluster = cluster_factory()
    data, loop, inventory = setup(cluster)
    names = dict((n, lv.pv_name("nvme-gds", n, data[n])) for n in data)

    # check mode: what would be created, and not one write
    rc, res, out = run(cluster, inventory, check=True)
    assert rc == 0, out[-4000:]
    assert res["changed"] is True and res["storage_class"] == {"name": "nvme-gds", "action": "would create"}
    assert [(v["node"], v["path"], v["action"]) for v in res["volumes"]] == [
        ("gpu-a", data["gpu-a"], "would create"), ("gpu-b", data["gpu-b"], "would create")]
    assert writes(cluster) == []

    # the real run, with --diff
    rc, res, out = run(cluster, inventory, diff=True)
    assert rc == 0, out[-4000:]
    assert res["changed"] is True and res["storage_class"]["action"] == "created"
    assert [(v["name"], v["action"]) for v in res["volumes"]] == [(names["gpu-a"], "created"), (names["gpu-b"], "created")]
    skipped = res["left_out"]
    assert [(s["node"], s["path"]) for s in skipped] == [("gpu-a", "/"), ("gpu-a", loop), ("gpu-b", "/")]
    assert "not NVMe" in skipped[0]["why"] and "loop device" in skipped[1]["why"]  # the root disk is virtio
    assert sorted(res["diff"]["after"]) == ["persistentvolume/" + names["gpu-a"], "persistentvolume/" + names["gpu-b"],
                                            "storageclass/nvme-gds"]
    assert all(v is None for v in res["diff"]["before"].values())
    sc = read(cluster, "sc", "nvme-gds")
    assert (sc["provisioner"], sc["volumeBindingMode"], sc["reclaimPolicy"]) == (
        "kubernetes.io/no-provisioner", "WaitForFirstConsumer", "Retain")
    assert sc["metadata"]["labels"][lv.MANAGED_BY[0]] == lv.MANAGED_BY[1]
    size = os.statvfs(data["gpu-a"])
    for node in ("gpu-a", "gpu-b"):
        pv = read(cluster, "pv", names[node])
        spec = pv["spec"]
        assert spec["local"] == {"path": data[node]} and spec["storageClassName"] == "nvme-gds"
        assert spec["persistentVolumeReclaimPolicy"] == "Retain" and spec["accessModes"] == ["ReadWriteOnce"]
        assert spec["capacity"]["storage"] == lv.capacity_text(size.f_blocks * size.f_frsize)  # the file system's size
        assert spec["nodeAffinity"]["required"]["nodeSelectorTerms"] == [{"matchExpressions": [
            {"key": "kubernetes.io/hostname", "operator": "In", "values": [node]}]}]
        notes = pv["metadata"]["annotations"]
        assert notes[lv.NODE_ANNOTATION] == node and notes[lv.PATH_ANNOTATION] == data[node]
        assert pv["metadata"]["labels"][lv.MANAGED_BY[0]] == lv.MANAGED_BY[1]
        assert pv["status"]["phase"] == "Available"

    # the second run and check mode change nothing
    count = len(writes(cluster))
    for check in (False, True):
        rc, res, out = run(cluster, inventory, check=check)
        assert rc == 0, out[-4000:]
        assert res["changed"] is False and res["storage_class"]["action"] == "unchanged"
        assert [v["action"] for v in res["volumes"]] == ["unchanged", "unchanged"]
    assert len(writes(cluster)) == count


def test_a_pv_of_that_name_not_ours_is_refused_and_nothing_changes(cluster_factory):
    cluster = cluster_factory()
    data, _loop, inventory = setup(cluster)
    theirs = lv.pv_body("nvme-gds", {"node": "gpu-b", "path": data["gpu-b"], "capacity": "1Gi"}, "gpu-b")
    theirs["metadata"]["labels"] = {"team": "storage"}
    cluster.core().create_persistent_volume(theirs, _preload_content=False)
    count = len(writes(cluster))
    rc, res, out = run(cluster, inventory)
    assert rc != 0 and res["failed"] is True
    assert res["msg"].startswith("nothing was changed: PersistentVolume %s exists and was not created by this module"
                                 % theirs["metadata"]["name"]), res["msg"]
    assert len(writes(cluster)) == count  # not the StorageClass, not gpu-a's PV
    assert read(cluster, "pv", theirs["metadata"]["name"])["metadata"]["labels"] == {"team": "storage"}


def test_a_storage_class_that_binds_otherwise_is_refused(cluster_factory):
    from kubernetes import client
    cluster = cluster_factory()
    _data, _loop, inventory = setup(cluster)
    client.StorageV1Api(cluster.core().api_client).create_storage_class(
        {"metadata": {"name": "nvme-gds"}, "provisioner": "ebs.csi.aws.com", "volumeBindingMode": "Immediate"},
        _preload_content=False)
    rc, res, out = run(cluster, inventory)
    assert rc != 0 and "StorageClass nvme-gds exists (not created by this module) with provisioner=ebs.csi.aws.com, " \
                       "volumeBindingMode=Immediate" in res["msg"], res.get("msg")
    assert res["volumes"] == []
