#!/usr/bin/env bash
# Builds the Kubernetes binaries cnbench's local lab cluster runs
# (internal/kubelab): kube-apiserver, kube-controller-manager,
# kube-scheduler, kubelet and kube-proxy, from the k8s.io/kubernetes Go
# module, into a cache directory: $CNBENCH_KUBE_BIN, or
# /var/cache/cnbench/kubernetes/VERSION/bin. Does nothing when the five are
# already there. Needs Go and the network (the module proxy) the first time.
set -euo pipefail

version=v1.31.13
out=${CNBENCH_KUBE_BIN:-/var/cache/cnbench/kubernetes/$version/bin}
components=(kube-apiserver kube-controller-manager kube-scheduler kubelet kube-proxy)

missing=0
for c in "${components[@]}"; do
	[[ -x $out/$c ]] || missing=1
done
if ((!missing)); then
	echo "build-kubernetes: $version binaries already in $out" >&2
	exit 0
fi
if ! command -v go >/dev/null; then
	echo "build-kubernetes: Go is not installed" >&2
	exit 1
fi

work=$(mktemp -d /tmp/cnbench-build-kubernetes.XXXXXX)
trap 'chmod -R u+w "$work" 2>/dev/null; rm -rf "$work"' EXIT
# The module proxy answers version queries only from inside a module.
probe=$work/probe
mkdir -p "$probe"
(cd "$probe" && go mod init cnbench.invalid/probe >/dev/null 2>&1)
export GOFLAGS="-mod=mod -buildvcs=false"

echo "build-kubernetes: fetching k8s.io/kubernetes@$version" >&2
dir=$(cd "$probe" && go mod download -json "k8s.io/kubernetes@$version" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",\{0,1\}$/\1/p')
if [[ -z $dir || ! -d $dir ]]; then
	echo "build-kubernetes: could not download k8s.io/kubernetes@$version" >&2
	exit 1
fi
src=$work/src
cp -r "$dir" "$src"
chmod -R u+w "$src"
cd "$src"
rm -f go.work go.work.sum

# The module's go.mod points the k8s.io/* staging modules at
# ./staging/src, which the published module leaves out: point each at its
# own published release instead, the one of the same patch level
# (v0.31.13 for v1.31.13) where there is one, else the newest of the minor.
want=v0.${version#v1.}
minor=$(cut -d. -f2 <<<"$want")
pick() {
	local vs best
	vs=$(cd "$probe" && go list -m -versions "$1" 2>/dev/null | tr ' ' '\n' | grep "^v0\.$minor\.[0-9]*$" || true)
	if grep -qx "$want" <<<"$vs"; then
		echo "$want"
		return
	fi
	best=$(sort -t. -k3 -n <<<"$vs" | tail -1)
	echo "${best:-$want}"
}
for m in k8s.io/sample-apiserver k8s.io/sample-cli-plugin k8s.io/sample-controller k8s.io/code-generator; do
	go mod edit -droprequire="$m" -dropreplace="$m"
done
for m in $(sed -n 's#^[[:space:]]*\(k8s\.io/[A-Za-z0-9_-]*\) => \./staging/src/k8s\.io/.*#\1#p' go.mod); do
	v=$(pick "$m")
	echo "build-kubernetes: $m $v" >&2
	go mod edit -replace="$m=$m@$v"
done

echo "build-kubernetes: building ${components[*]} (several minutes)" >&2
mkdir -p "$work/bin" "$out"
pkgs=()
for c in "${components[@]}"; do
	pkgs+=("./cmd/$c")
done
go build -ldflags "-X k8s.io/component-base/version.gitVersion=$version" -o "$work/bin/" "${pkgs[@]}"
for c in "${components[@]}"; do
	mv "$work/bin/$c" "$out/$c"
done
echo "build-kubernetes: $version binaries in $out" >&2
