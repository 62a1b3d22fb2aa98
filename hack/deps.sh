#!/usr/bin/env bash
# Installs, from Debian's packages, what the node agent runs: containerd, runc, the CNI
# plugins, busybox-static (the tests' image), iptables/iproute2 and nftables (the service
# proxy's nft). Only what is missing, and only as root; never kubernetes-client, which
# conflicts with a kubectl already on the machine.
set -euo pipefail
need=()
command -v containerd >/dev/null || need+=(containerd)
command -v runc >/dev/null || need+=(runc)
[ -x /usr/lib/cni/bridge ] || [ -x /opt/cni/bin/bridge ] || need+=(containernetworking-plugins)
[ -x /bin/busybox ] || need+=(busybox-static)
command -v iptables >/dev/null || need+=(iptables)
command -v ip >/dev/null || need+=(iproute2)
command -v nft >/dev/null || need+=(nftables)
[ ${#need[@]} -eq 0 ] && exit 0
if [ "$(id -u)" != 0 ]; then
  echo "the node agent needs ${need[*]}; run as root to install them (apt-get)" >&2
  exit 1
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${need[@]}"
