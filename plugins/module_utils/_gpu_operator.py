# -*- coding: utf-8 -*-
# Copyright (c) gpudirect.storage contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""GPU Operator values and GDS preflight: pure functions. PRIVATE to the collection.

- :func:`option_values` maps the module's ``gds``/``rdma``/``driver`` options onto the
  chart's value paths (gpu-operator ``deployments/gpu-operator/values.yaml``).
- :func:`desired_values` merges values files, ``values`` and those options like helm does,
  refusing an option that contradicts ``values`` (naming both).
- :func:`preflight` checks what would break GDS before helm runs: GDS >= 2.17.5 needs the
  open kernel module; the GPU Operator ships nvidia-fs only for Ubuntu 22.04/24.04 and
  RHCOS (OpenShift) (gpu-operator #2416, #2911: GDS on another OS breaks validation of every
  GPU operand on the node).
"""

from __future__ import annotations

import re

from ansible_collections.gpudirect.storage.plugins.module_utils import _hostparse
from ansible_collections.gpudirect.storage.plugins.module_utils._helm import merge_values
from ansible_collections.gpudirect.storage.plugins.module_utils._k8s_wait import gpu_nodes, node_os, os_text

OPEN_MODULE_MIN_GDS = (2, 17, 5)
# NFD os_release ID -> supported VERSION_IDs (None: any): the GPU Operator column of the
# collection's one OS table (_hostparse.GDS_SUPPORTED_OS)
GDS_SUPPORTED_OS = _hostparse.supported_os("gpu_operator")

# option path -> chart value path
OPTION_PATHS = (
    (("gds", "enabled"), ("gds", "enabled")),
    (("gds", "version"), ("gds", "version")),
    (("gds", "repository"), ("gds", "repository")),
    (("gds", "image"), ("gds", "image")),
    (("rdma", "enabled"), ("driver", "rdma", "enabled")),
    (("rdma", "use_host_mofed"), ("driver", "rdma", "useHostMofed")),
    (("driver", "version"), ("driver", "version")),
    (("driver", "kernel_module_type"), ("driver", "kernelModuleType")),
)


class ValuesError(ValueError):
    """Values that cannot be used; the message names the option / path."""


def _get(tree, path):
    node = tree
    for key in path:
        if not isinstance(node, dict) or key not in node:
            return None, False
        node = node[key]
    return node, True


def _set(tree, path, value):
    node = tree
    for key in path[:-1]:
        node = node.setdefault(key, {})
    node[path[-1]] = value


def option_values(options):
    """{'gds': {...}, 'rdma': {...}, 'driver': {...}} (None = not set) -> (values tree, sources)."""
    tree, sources = {}, {}
    for opt_path, value_path in OPTION_PATHS:
        value = _get(options or {}, opt_path)[0]
        if value is not None:
            _set(tree, value_path, value)
            sources[value_path] = ".".join(opt_path)
    return tree, sources


def desired_values(files, values, options):
    """Merge ``files`` ([(name, dict)]), then ``values``, then the structured options;
    ``gds.enabled`` is true unless one of them says otherwise.

    An option set to something else than ``values``/a values file says for the same path is
    an error (ValuesError naming both), never a silent override.
    """
    merged = {}
    for name, content in files or []:
        if content is None:
            continue
        if not isinstance(content, dict):
            raise ValuesError("values_files: %s does not hold a mapping of values" % name)
        merged = merge_values(merged, content)
    if values is not None and not isinstance(values, dict):
        raise ValuesError("values must be a dictionary")
    merged = merge_values(merged, values or {})
    opts, sources = option_values(options)
    for value_path, option in sources.items():
        have, found = _get(merged, value_path)
        want = _get(opts, value_path)[0]
        if found and have is not None and str(have).lower() != str(want).lower():
            raise ValuesError("option %s=%r contradicts values %s=%r; set it in one place only"
                              % (option, want, ".".join(value_path), have))
    result = merge_values(merged, opts)
    if _get(result, ("gds", "enabled"))[0] is None:
        _set(result, ("gds", "enabled"), True)  # the module's default, unlike the chart's
    return result


def gds_settings(values):
    """(enabled, version or None) as the chart will see them (chart default: enabled)."""
    enabled, found = _get(values, ("gds", "enabled"))
    version = _get(values, ("gds", "version"))[0]
    return (True if not found or enabled is None else _truthy(enabled)), (str(version) if version else None)


def _truthy(value):
    if isinstance(value, str):
        return value.strip().lower() in ("true", "yes", "1", "on")
    return bool(value)


def parse_gds_version(text):
    match = re.match(r"^v?(\d+)\.(\d+)(?:\.(\d+))?", str(text or ""))
    if not match:
        return None
    return tuple(int(part or 0) for part in match.groups())


def os_supported(os_info):
    return _hostparse.os_supported(os_info.get("id"), os_info.get("version_id"), GDS_SUPPORTED_OS)


def preflight(values, nodes, unsupported_os="warn"):
    """Check ``values`` (desired, merged) against the cluster's ``nodes`` (JSON).

    Returns {errors: [...], warnings: [...], nodes: [{name, os, os_supported}]}. Nothing is
    checked when GDS is disabled.
    """
    errors, warnings, reports = [], [], []
    enabled, version = gds_settings(values)
    for node in gpu_nodes(nodes):
        info = node_os(node)
        reports.append({"name": node["metadata"]["name"], "os": os_text(info),
                        "os_supported": os_supported(info) if info.get("id") else None})
    if not enabled:
        return {"errors": errors, "warnings": warnings, "nodes": reports}
    parsed = parse_gds_version(version) if version else None
    needs_open = parsed is None or parsed >= OPEN_MODULE_MIN_GDS
    module_type, found = _get(values, ("driver", "kernelModuleType"))
    use_open, use_open_found = _get(values, ("driver", "useOpenKernelModules"))
    proprietary = str(module_type).lower() == "proprietary" if found and module_type is not None else (
        use_open_found and use_open is not None and not _truthy(use_open))
    if needs_open and proprietary:
        source = ("driver.kernelModuleType=proprietary" if found and module_type is not None
                  else "driver.useOpenKernelModules=false")
        errors.append("GDS %s needs the open NVIDIA kernel module but %s; use driver.kernel_module_type=open "
                      "(or auto)" % (version or "(chart default, >= 2.17.5)", source))
    unknown = [r["name"] for r in reports if r["os_supported"] is None]
    bad = ["%s (%s)" % (r["name"], r["os"]) for r in reports if r["os_supported"] is False]
    if unknown:
        warnings.append("cannot check the OS of GPU nodes %s: NFD labels %s missing"
                        % (", ".join(unknown), "feature.node.kubernetes.io/system-os_release.ID"))
    if bad:
        text = ("GDS is supported by the GPU Operator only on Ubuntu 22.04/24.04 and RHCOS; enabling it on "
                "GPU nodes %s makes nvidia-fs-ctr fail and breaks the GPU operands there (gpu-operator #2911)"
                % ", ".join(bad))
        (errors if unsupported_os == "fail" else warnings).append(text)
    return {"errors": errors, "warnings": warnings, "nodes": reports}
