package containerd

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"path/filepath"
	"strconv"
	"text/template"
)

// Paths under Config.StateDir. Everything containerd writes lives here, so two berth nodes
// on one machine (each with its own StateDir, Bridge and PodCIDR) do not collide. What stays
// machine-wide: the CNI plugins' result cache /var/lib/cni/results (a fixed path in the
// plugins; its files are keyed by network name, container ID and interface, so they do not
// clash), shim sockets in /run/containerd/s (named by a hash of the containerd address) and
// the iptables chains of the bridge and portmap plugins (keyed by container ID).
const (
	configFile       = "config.toml"
	defaultSocket    = "containerd.sock"
	logFile          = "containerd.log"
	rootDir          = "root"
	stateDir         = "state"
	optDir           = "opt"
	cniConfDir       = "cni/net.d"
	cniTemplateFile  = "cni/berth.conflist.template"
	cniConfFile      = "10-berth.conflist"
	cniIPAMDir       = "cni/networks"
	registryHostsDir = "certs.d"
)

// NetworkName is the name of berth's CNI network.
const NetworkName = "berth"

// DefaultBridge is the Linux bridge the pods of a node attach to.
const DefaultBridge = "berth0"

// containerdConfig renders containerd's config.toml (version 2) for c, whose defaults are
// already filled in. socket is the gRPC socket's path.
//
// Each setting is here for a reason:
//   - root, state, opt and the netns mounts under StateDir: nothing shared with another
//     containerd on the machine.
//   - restrict_oom_score_adj: root here lacks CAP_SYS_RESOURCE, so runc cannot set an
//     oom_score_adj below containerd's own; without it every sandbox fails to start.
//   - runc with SystemdCgroup = false: there is no systemd; the kubelet side uses cgroupfs.
//   - conf_template: when berth does not know the pod CIDR yet, containerd renders the CNI
//     config itself once the node agent sends it (CRI UpdateRuntimeConfig).
//   - registry config_path: an (initially empty) hosts directory. With it, containerd reaches
//     registries on localhost / 127.0.0.0/8 / ::1 over plain HTTP, and any other registry
//     over HTTPS, unless a hosts.toml under it says otherwise.
//   - a bolt open timeout, so that a second containerd on the same root fails instead of
//     waiting forever for the database lock.
func containerdConfig(c Config, socket string) string {
	q := strconv.Quote
	d := c.StateDir
	var b bytes.Buffer
	fmt.Fprintf(&b, `# Written by berth; rewritten on every start.
version = 2
root = %s
state = %s
disabled_plugins = ["io.containerd.snapshotter.v1.aufs", "io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.devmapper", "io.containerd.snapshotter.v1.zfs"]

[grpc]
  address = %s

[debug]
  level = %s

[timeouts]
  "io.containerd.timeout.bolt.open" = "10s"

[plugins]
  [plugins."io.containerd.internal.v1.opt"]
    path = %s

  [plugins."io.containerd.grpc.v1.cri"]
    sandbox_image = %s
    restrict_oom_score_adj = true
    netns_mounts_under_state_dir = true
    stream_server_address = "127.0.0.1"
    stream_server_port = "0"

    [plugins."io.containerd.grpc.v1.cri".containerd]
      snapshotter = "overlayfs"
      default_runtime_name = "runc"

      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
        runtime_type = "io.containerd.runc.v2"

        [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
          SystemdCgroup = false

    [plugins."io.containerd.grpc.v1.cri".cni]
      bin_dir = %s
      conf_dir = %s
      conf_template = %s
      max_conf_num = 1

    [plugins."io.containerd.grpc.v1.cri".registry]
      config_path = %s
`,
		q(filepath.Join(d, rootDir)), q(filepath.Join(d, stateDir)),
		q(socket), q(c.LogLevel),
		q(filepath.Join(d, optDir)),
		q(c.SandboxImage),
		q(c.CNIBinDir), q(filepath.Join(d, cniConfDir)), q(filepath.Join(d, cniTemplateFile)),
		q(filepath.Join(d, registryHostsDir)))
	return b.String()
}

// cniTemplate is berth's CNI network as a Go template in containerd's conf_template
// language: .PodCIDRRanges and .Routes come from the pod CIDR. A bridge with the node's
// gateway address, host-local IPAM (its allocations under StateDir), and portmap for
// hostPort. Masquerading is one rule for the whole pod CIDR (ensureMasquerade) rather than
// the bridge plugin's ipMasq, which costs seven iptables runs per pod: about 45 ms of each
// pod's start on a small machine. The loopback interface is not in
// the list: containerd's CRI plugin sets it up in every sandbox itself.
func cniTemplate(c Config) string {
	js := func(s string) string { b, _ := json.Marshal(s); return string(b) }
	return `{
  "cniVersion": "1.0.0",
  "name": ` + js(NetworkName) + `,
  "plugins": [
    {
      "type": "bridge",
      "bridge": ` + js(c.Bridge) + `,
      "isGateway": true,
      "ipMasq": false,
      "hairpinMode": true,
      "ipam": {
        "type": "host-local",
        "dataDir": ` + js(filepath.Join(c.StateDir, cniIPAMDir)) + `,
        "ranges": [{{range $i, $r := .PodCIDRRanges}}{{if $i}}, {{end}}[{"subnet": "{{$r}}"}]{{end}}],
        "routes": [{{range $i, $r := .Routes}}{{if $i}}, {{end}}{"dst": "{{$r}}"}{{end}}]
      }
    },
    {
      "type": "portmap",
      "capabilities": {"portMappings": true}
    }
  ]
}
`
}

// templateData is what containerd hands conf_template (its cniConfigTemplate).
type templateData struct {
	PodCIDR       string
	PodCIDRRanges []string
	Routes        []string
}

// cniConfList renders the template for podCIDR the way containerd would: one range, and a
// default route of the CIDR's family.
func cniConfList(c Config, podCIDR string) ([]byte, error) {
	_, ipnet, err := net.ParseCIDR(podCIDR)
	if err != nil {
		return nil, fmt.Errorf("pod CIDR: %w", err)
	}
	route := "0.0.0.0/0"
	if ipnet.IP.To4() == nil {
		route = "::/0"
	}
	tmpl, err := template.New("cni").Parse(cniTemplate(c))
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	data := templateData{PodCIDR: ipnet.String(), PodCIDRRanges: []string{ipnet.String()}, Routes: []string{route}}
	if err := tmpl.Execute(&b, data); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}
