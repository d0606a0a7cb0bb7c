# -*- coding: utf-8 -*-
# Copyright (c) gpudirect.storage contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""The EL 9 flavour of the lab's base rootfs (``labctl up --os el9``), made from the Debian one.

What makes it EL 9 for the collection and for Ansible: Debian's own ``dnf`` (4.14, with its
plugins: ``dnf config-manager``) and ``rpm`` (4.18) with RHEL 9's ``/etc/dnf/dnf.conf`` and the rpm database where RHEL keeps it
(``/var/lib/rpm``; Debian's rpm defaults to ``~/.rpmdb``); a ``rocky-release`` package in that
database that provides ``system-release(releasever) = 9`` (dnf reads ``$releasever`` from it) and
owns Rocky Linux 9's ``/etc/os-release``; ``/etc/yum.repos.d`` and ``/etc/pki/rpm-gpg``; and no
apt or dpkg commands (the collection picks apt when it finds them). It is Debian underneath:
glibc, systemd, python3 and every other file come from Debian 12.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import tempfile

VERSION = "v4"
ROCKY_VERSION = "9.6"
# dnf-plugins-core: "dnf config-manager", which enables a repository defined on the host (CRB), as on EL 9
EXTRA_PACKAGES = ["dnf", "rpm", "python3-dnf", "dnf-plugins-core", "gpg"]
# Debian's dnf-plugins-core also ships and enables plugins that EL 9 packages apart and does not
# install: "local" above all, whose _dnf_local repository (gpgcheck=1, no gpgkey) makes dnf
# refuse every signed package ("you do not have any GPG public keys installed").
NOT_ON_EL9_PLUGINS = ("local", "versionlock", "post-transaction-actions")
# apt and dpkg must not be found: the collection's get_backend() prefers apt when it is there.
APT_DPKG_COMMANDS = ("apt", "apt-get", "apt-cache", "apt-config", "apt-key", "apt-mark", "dpkg", "dpkg-query",
                     "dpkg-deb", "dpkg-divert", "dpkg-split", "dpkg-trigger", "dpkg-statoverride",
                     "dpkg-maintscript-helper", "dpkg-realpath")

OS_RELEASE = """NAME="Rocky Linux"
VERSION="{v} (Blue Onyx)"
ID="rocky"
ID_LIKE="rhel centos fedora"
VERSION_ID="{v}"
PLATFORM_ID="platform:el9"
PRETTY_NAME="Rocky Linux {v} (Blue Onyx)"
ANSI_COLOR="0;32"
LOGO="fedora-logo-icon"
CPE_NAME="cpe:/o:rocky:rocky:9::baseos"
HOME_URL="https://rockylinux.org/"
VENDOR_NAME="RESF"
SUPPORT_END="2032-05-31"
ROCKY_SUPPORT_PRODUCT="Rocky-Linux-9"
ROCKY_SUPPORT_PRODUCT_VERSION="{v}"
REDHAT_SUPPORT_PRODUCT="Rocky Linux"
REDHAT_SUPPORT_PRODUCT_VERSION="{v}"
""".format(v=ROCKY_VERSION)

# RHEL 9's /etc/dnf/dnf.conf (Debian's sets best=False and skip_if_unavailable=True).
DNF_CONF = """[main]
gpgcheck=1
installonly_limit=3
clean_requirements_on_remove=True
best=True
skip_if_unavailable=False
"""

RELEASE_SPEC = """Name: rocky-release
Version: {v}
Release: 1.2.el9
Summary: Rocky Linux release files (gpudirect.storage lab stand-in)
License: BSD-3-Clause
BuildArch: noarch
Provides: system-release = {v}-1.2.el9
Provides: system-release(releasever) = 9
Provides: redhat-release = {v}-1.2.el9
Provides: base-module(platform:el9)
# What Debian's dpkg owns underneath and rpm scriptlets and packages require (on RHEL: bash, glibc,
# coreutils ...): without it dnf refuses any package with a %%post ("nothing provides /bin/sh").
Provides: /bin/sh
Provides: /bin/bash
Provides: /usr/bin/sh
Provides: bash
Provides: coreutils
Provides: glibc
Provides: systemd
Provides: kmod
Provides: python3

%description
The lab's EL 9 hosts are Debian 12 underneath; this package makes the rpm database say EL 9.

%install
mkdir -p %{{buildroot}}/etc %{{buildroot}}/usr/lib
cp %{{_sourcedir}}/os-release %{{buildroot}}/usr/lib/os-release
ln -s ../usr/lib/os-release %{{buildroot}}/etc/os-release
echo "Rocky Linux release {v} (Blue Onyx)" > %{{buildroot}}/etc/rocky-release
ln -s rocky-release %{{buildroot}}/etc/redhat-release
ln -s rocky-release %{{buildroot}}/etc/system-release

%files
/usr/lib/os-release
/etc/os-release
/etc/rocky-release
/etc/redhat-release
/etc/system-release
""".format(v=ROCKY_VERSION)


def image_dir(cache_root, debian_dir):
    key = hashlib.sha256((debian_dir + " ".join(EXTRA_PACKAGES) + RELEASE_SPEC + DNF_CONF + VERSION)
                         .encode()).hexdigest()[:10]
    return os.path.join(cache_root, "base-el9-%s" % key)


def _release_rpm(workdir, sh):
    top = os.path.join(workdir, "rpmbuild")
    for sub in ("SPECS", "SOURCES", "RPMS", "BUILD", "BUILDROOT"):
        os.makedirs(os.path.join(top, sub), exist_ok=True)
    with open(os.path.join(top, "SOURCES", "os-release"), "w") as f:
        f.write(OS_RELEASE)
    spec = os.path.join(top, "SPECS", "rocky-release.spec")
    with open(spec, "w") as f:
        f.write(RELEASE_SPEC)
    sh(["rpmbuild", "--quiet", "-bb", "--define", "_topdir " + top, "--define", "_build_id_links none", spec])
    return os.path.join(top, "RPMS", "noarch", "rocky-release-%s-1.2.el9.noarch.rpm" % ROCKY_VERSION)


def _apt_install_in(root, mirror, suite, sh):
    """Install EXTRA_PACKAGES from the Debian mirror into ``root``. The chroot's /proc is mounted
    in a mount namespace of its own (unshare --mount-proc) that ends with the command, so nothing
    stays mounted inside the tree (a later rmtree must never reach a host file system); the
    debootstrap base has its own /dev nodes."""
    with open(os.path.join(root, "etc/apt/sources.list"), "w") as f:
        f.write("deb %s %s main\n" % (mirror, suite))
    isolated = ["unshare", "--fork", "--pid", "--mount-proc=" + os.path.join(root, "proc"),
                "chroot", root, "env", "DEBIAN_FRONTEND=noninteractive"]
    sh(isolated + ["apt-get", "update", "-qq"])
    sh(isolated + ["apt-get", "install", "-y", "-qq", "--no-install-recommends"] + EXTRA_PACKAGES)
    sh(isolated + ["apt-get", "clean"])
    with open(os.path.join(root, "etc/apt/sources.list"), "w") as f:
        f.write("# lab hosts reach no mirror\n")
    shutil.rmtree(os.path.join(root, "var/lib/apt/lists"), ignore_errors=True)


def build_image(cache_root, debian_dir, mirror, suite, force, sh, log):
    """The cached EL 9 rootfs, built once from the Debian base ``debian_dir`` (about 40 s)."""
    target = image_dir(cache_root, debian_dir)
    if os.path.exists(os.path.join(target, ".complete")) and not force:
        return target
    tmp = target + ".tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    os.makedirs(cache_root, exist_ok=True)
    log("building the EL 9 flavour of the base rootfs (Debian's dnf and rpm, once) ...")
    sh(["cp", "-a", debian_dir, tmp])
    os.unlink(os.path.join(tmp, ".complete"))
    _apt_install_in(tmp, mirror, suite, sh)
    for plugin in NOT_ON_EL9_PLUGINS:
        for path in ("usr/lib/python3/dist-packages/dnf-plugins/%s.py" % plugin, "etc/dnf/plugins/%s.conf" % plugin):
            if os.path.lexists(os.path.join(tmp, path)):
                os.unlink(os.path.join(tmp, path))
    with open(os.path.join(tmp, "etc/dnf/dnf.conf"), "w") as f:
        f.write(DNF_CONF)
    for d in ("etc/yum.repos.d", "etc/pki/rpm-gpg", "var/lib/rpm", "etc/dnf/vars", "etc/rpm"):
        os.makedirs(os.path.join(tmp, d), exist_ok=True)
    with open(os.path.join(tmp, "etc/rpm/macros.dbpath"), "w") as f:
        f.write("# as on RHEL 9 (Debian's rpm keeps its database in ~/.rpmdb)\n%_dbpath /var/lib/rpm\n")
    work = tempfile.mkdtemp(prefix="el9-release-")
    try:
        rpm_file = _release_rpm(work, sh)
        for link in ("etc/os-release",):  # owned by the release package from now on
            os.unlink(os.path.join(tmp, link))
        shutil.copy(rpm_file, os.path.join(tmp, "tmp/release.rpm"))
        sh(["chroot", tmp, "rpm", "--initdb"])
        sh(["chroot", tmp, "rpm", "-i", "--nodeps", "--force-debian", "/tmp/release.rpm"])
        os.unlink(os.path.join(tmp, "tmp/release.rpm"))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    for name in APT_DPKG_COMMANDS:
        path = os.path.join(tmp, "usr/bin", name)
        if os.path.lexists(path):
            os.unlink(path)
    open(os.path.join(tmp, ".complete"), "w").close()
    shutil.rmtree(target, ignore_errors=True)
    os.rename(tmp, target)
    return target
