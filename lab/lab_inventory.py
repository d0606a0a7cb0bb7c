# -*- coding: utf-8 -*-
# Copyright (c) gpudirect.storage contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""`make lab-inventory DEST=dir`: the running lab as an inventory of your own, to use from any
directory with the collection installed from its tarball - everything the checkout's lab
inventory (inventories/lab) takes from its group_vars and lab/ansible.cfg, written out: the
hosts in group gds_hosts, the SSH key and user, the hosts' keys in DEST/.known_hosts (host key
checking stays on), the re-rooted /proc and shims (gds_environment), the lab repository's URL
and the settings of the lab's test packages (cufile_version, ...). Nothing lab_* remains: the
file reads like an inventory for real hosts. Run it again after `make lab-up`."""

import argparse
import os
import subprocess
import sys

import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LAB_VARS = os.path.join(ROOT, "inventories", "lab", "group_vars", "all.yml")
REPO_VARIABLES = ("mofed_repo", "nvidia_fs_repo")


def lab_hosts(inventory):
    """[(name, address, os)] of the lab inventory labctl wrote."""
    with open(inventory) as f:
        hosts = yaml.safe_load(f)["all"]["children"]["lab"]["hosts"] or {}
    return [(name, h["ansible_host"], h.get("lab_os", "debian12")) for name, h in hosts.items()]


def repository(lab_vars, address, os_name):
    """The lab repository of a host's OS, its URL written out (the lab's bridge address)."""
    repo = dict(lab_vars["lab_gds_repos"][os_name])
    url = "http://%s.1:8080/" % address.rsplit(".", 1)[0]
    repo["url"] = repo["url"].replace("{{ lab_repo_url }}", url)
    return repo


def group_vars(lab_vars, hosts, known_hosts):
    out = dict((k, v) for k, v in lab_vars.items() if not k.startswith("lab_") and k not in REPO_VARIABLES)
    # host key checking stays on, against the lab hosts' keys only (their keys change with each
    # `labctl up`: run make lab-inventory again then)
    out["ansible_ssh_common_args"] = "-o UserKnownHostsFile=%s" % known_hosts
    name, address, os_name = hosts[0]
    for variable in REPO_VARIABLES:
        out[variable] = repository(lab_vars, address, os_name)
    return out


def host_vars(lab_vars, hosts):
    """Per host: its address, and the repository of its OS where it differs from the first host's."""
    first_os = hosts[0][2]
    out = {}
    for name, address, os_name in hosts:
        out[name] = {"ansible_host": address}
        if os_name != first_os:
            for variable in REPO_VARIABLES:
                out[name][variable] = repository(lab_vars, address, os_name)
    return out


def write(path, header, data):
    with open(path, "w") as f:
        f.write(header + "---\n" + yaml.safe_dump(data, sort_keys=False, default_flow_style=False))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", maxsplit=1)[0])
    parser.add_argument("--lab-inventory", default=os.path.join(ROOT, "inventories", "lab", "hosts.yml"))
    parser.add_argument("--lab", default="the lab")
    parser.add_argument("dest")
    args = parser.parse_args(argv)
    if not os.path.isfile(args.lab_inventory):
        sys.exit("lab-inventory: %s is missing: bring the lab up first (make lab-up N=3)" % args.lab_inventory)
    hosts = lab_hosts(args.lab_inventory)
    with open(LAB_VARS) as f:
        lab_vars = yaml.safe_load(f)
    dest = os.path.abspath(os.path.expanduser(args.dest))
    os.makedirs(os.path.join(dest, "group_vars"), exist_ok=True)
    known_hosts = os.path.join(dest, ".known_hosts")  # a dot file: no inventory source
    scan = subprocess.run(["ssh-keyscan", "-T", "10"] + [a for dummy, a, dummy in hosts], stdout=subprocess.PIPE,
                          stderr=subprocess.DEVNULL, text=True, timeout=120, check=False)
    if not scan.stdout.strip():
        sys.exit("lab-inventory: ssh-keyscan found no host key: is %s up (make lab-status)?" % args.lab)
    with open(known_hosts, "w") as f:
        f.write(scan.stdout)
    header = "# %s as an inventory of your own, written by `make lab-inventory`; run it again after make lab-up.\n" % (
        args.lab)
    write(os.path.join(dest, "hosts.yml"), header,
          {"all": {"children": {"gds_hosts": {"hosts": host_vars(lab_vars, hosts)}}}})
    write(os.path.join(dest, "group_vars", "gds_hosts.yml"),
          header + "# The settings of inventories/lab/group_vars/all.yml, written out for this lab.\n",
          group_vars(lab_vars, hosts, known_hosts))
    print("lab-inventory: %d hosts of %s in %s (hosts.yml, group_vars/gds_hosts.yml, .known_hosts)"
          % (len(hosts), args.lab, dest))


if __name__ == "__main__":
    main()
