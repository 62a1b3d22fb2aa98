// Command harness is hack/conformance.sh's helper: it makes the upstream control plane's
// PKI and kubeconfigs, the RBAC bindings kubeadm would make, the test images, the wait for
// the cluster DNS, the ginkgo focus of the listed tests, and the final count. Each is a
// subcommand:
//
//	harness pki --dir DIR --api-ip IP
//	harness kubeconfigs --dir DIR --server URL --node NAME --out DIR
//	harness bootstrap --kubeconfig FILE
//	harness images --cache DIR --agnhost FILE --out FILE
//	harness dns --kubeconfig FILE [--dns-domain DOMAIN] [--timeout DURATION]
//	harness focus --tests FILE [--match REGEX]
//	harness report --tests FILE [--match REGEX] --report FILE
package main

import (
	"flag"
	"fmt"
	"os"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: harness pki|kubeconfigs|bootstrap|images|dns|focus|report [flags]")
		os.Exit(2)
	}
	cmds := map[string]func(args []string) error{
		"pki":         pkiCmd,
		"kubeconfigs": kubeconfigsCmd,
		"bootstrap":   bootstrapCmd,
		"images":      imagesCmd,
		"dns":         dnsCmd,
		"focus":       focusCmd,
		"report":      reportCmd,
	}
	cmd, ok := cmds[os.Args[1]]
	if !ok {
		fmt.Fprintf(os.Stderr, "harness: unknown subcommand %q\n", os.Args[1])
		os.Exit(2)
	}
	if err := cmd(os.Args[2:]); err != nil {
		fmt.Fprintf(os.Stderr, "harness %s: %v\n", os.Args[1], err)
		os.Exit(1)
	}
}

// flags parses args into a FlagSet that fails on unknown flags.
func flags(name string, args []string, define func(fs *flag.FlagSet)) error {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	define(fs)
	return fs.Parse(args)
}
