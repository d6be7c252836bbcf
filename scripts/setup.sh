#!/usr/bin/env bash
# Installs what cnbench and its tests need on a Debian machine, as root:
# the kernel's user-space tools, the external engines cnbench compares
# itself with, and the Go modules. Idempotent: installs only what is missing.
# With --kubernetes it also builds the Kubernetes binaries the tests' lab
# cluster runs (scripts/build-kubernetes.sh: several minutes, once), and
# flannel, its second pod network (scripts/build-flannel.sh: minutes, once).
set -euo pipefail

kubernetes=0
for arg in "$@"; do
	case $arg in
	--kubernetes) kubernetes=1 ;;
	*)
		echo "setup: unknown argument $arg (known: --kubernetes)" >&2
		exit 2
		;;
	esac
done

packages=(iproute2 nftables iperf3 sockperf ethtool iputils-ping procps chromium openvswitch-switch docker.io containernetworking-plugins)
# VM hosts: the emulator, the guest kernel and the guest's shell.
packages+=(qemu-system-x86 linux-image-cloud-amd64 busybox-static)

# The local Kubernetes lab cluster (internal/kubelab) runs its own etcd.
packages+=(etcd-server)

# netperf, the studies' classic engine, is in Debian's non-free component.
packages+=(netperf)
nonfree=/etc/apt/sources.list.d/cnbench-netperf-non-free.sources

missing=()
for p in "${packages[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
	echo "setup: installing ${missing[*]}" >&2
	export DEBIAN_FRONTEND=noninteractive
	if [[ " ${missing[*]} " == *" netperf "* && ! -e $nonfree ]] && [[ -z "$(apt-cache madison netperf 2>/dev/null)" ]]; then
		# Only this one source is added, for the distribution's own
		# codename and mirror; only netperf is asked of it.
		. /etc/os-release
		printf 'Types: deb\nURIs: http://deb.debian.org/debian\nSuites: %s\nComponents: non-free\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n' \
			"$VERSION_CODENAME" >"$nonfree"
	fi
	apt-get update -qq
	# cnbench runs private dockerds and Open vSwitch daemons of its own and
	# needs only the programs; keep the packages from starting the machine's
	# own daemons (and Docker's docker0 and firewall rules) as they install.
	if [[ ! -e /usr/sbin/policy-rc.d ]]; then
		printf '#!/bin/sh\nexit 101\n' >/usr/sbin/policy-rc.d
		chmod +x /usr/sbin/policy-rc.d
		trap 'rm -f /usr/sbin/policy-rc.d' EXIT
	fi
	apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
# etcd-server enables its service as it installs; the lab cluster runs an
# etcd of its own, so a service this run installed stays off.
if [[ " ${missing[*]:-} " == *" etcd-server "* ]] && command -v systemctl >/dev/null; then
	systemctl disable etcd >/dev/null 2>&1 || true
fi

if ! command -v go >/dev/null; then
	echo "setup: Go is not installed; cnbench needs Go $(sed -n 's/^go //p' "$(dirname "$0")/../go.mod") or newer" >&2
	exit 1
fi
cd "$(dirname "$0")/.."
go mod download
# The Kubernetes and flannel binaries of the tests' lab cluster, built once
# into a cache.
if ((kubernetes)); then
	bash scripts/build-kubernetes.sh
	bash scripts/build-flannel.sh
fi
