#!/usr/bin/env bash
# Builds flannel, the second pod network of cnbench's local lab cluster
# (internal/kubelab, cnbench cluster up --cni flannel): flanneld from the
# github.com/flannel-io/flannel Go module, and its CNI plugin from
# github.com/containernetworking/plugins, into a cache directory:
# $CNBENCH_FLANNEL_BIN, or /var/cache/cnbench/flannel/VERSION/bin. Does
# nothing when both are already there. Needs Go and the network (the
# module proxy) the first time.
set -euo pipefail

version=v0.28.4
plugins=v0.9.1
out=${CNBENCH_FLANNEL_BIN:-/var/cache/cnbench/flannel/$version/bin}

if [[ -x $out/flanneld && -x $out/flannel ]]; then
	echo "build-flannel: flannel $version already in $out" >&2
	exit 0
fi
if ! command -v go >/dev/null; then
	echo "build-flannel: Go is not installed" >&2
	exit 1
fi

work=$(mktemp -d /tmp/cnbench-build-flannel.XXXXXX)
trap 'chmod -R u+w "$work" 2>/dev/null; rm -rf "$work"' EXIT
probe=$work/probe
mkdir -p "$probe"
(cd "$probe" && go mod init cnbench.invalid/probe >/dev/null 2>&1)
export GOFLAGS="-mod=mod -buildvcs=false"

fetch() {
	local dir
	dir=$(cd "$probe" && go mod download -json "$1" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",\{0,1\}$/\1/p')
	if [[ -z $dir || ! -d $dir ]]; then
		echo "build-flannel: could not download $1" >&2
		exit 1
	fi
	cp -r "$dir" "$2"
	chmod -R u+w "$2"
}

echo "build-flannel: fetching github.com/flannel-io/flannel@$version" >&2
fetch "github.com/flannel-io/flannel@$version" "$work/flannel"
# The Tencent Cloud backend's SDK is not on the module proxy; the lab runs
# the VXLAN backend, so flanneld is built without that one.
(
	cd "$work/flannel"
	sed -i '/flannel\/pkg\/backend\/tencentvpc"/d' main.go
	for m in $(sed -n 's#^[[:space:]]*\(github\.com/tencentcloud/[^ ]*\) .*#\1#p' go.mod); do
		go mod edit -droprequire="$m"
	done
	echo "build-flannel: building flanneld (a few minutes)" >&2
	go build -ldflags "-X github.com/flannel-io/flannel/pkg/version.Version=$version" -o "$work/bin/flanneld" .
)

echo "build-flannel: fetching github.com/containernetworking/plugins@$plugins" >&2
fetch "github.com/containernetworking/plugins@$plugins" "$work/plugins"
(
	cd "$work/plugins"
	rm -rf vendor
	echo "build-flannel: building the flannel CNI plugin" >&2
	go build -o "$work/bin/flannel" ./plugins/meta/flannel
)

mkdir -p "$out"
mv "$work/bin/flanneld" "$work/bin/flannel" "$out/"
echo "build-flannel: flannel $version in $out" >&2
