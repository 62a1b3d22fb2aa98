package main

import (
	"fmt"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/berth-cluster/berth/pkg/cluster"
	"github.com/berth-cluster/berth/pkg/cri"
)

// newImageCommand is `berth image`: images in the node's container runtime, loaded without
// a registry.
func newImageCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "image",
		Short: "Manage images in the node's container runtime",
		Args:  cobra.NoArgs,
	}
	cmd.AddCommand(newImageImportCommand())
	return cmd
}

func newImageImportCommand() *cobra.Command {
	var endpoint, dataDir string
	cmd := &cobra.Command{
		Use:   "import FILE.tar",
		Short: "Load an image archive (docker save or OCI layout tar) into containerd's CRI namespace",
		Long: `Load an image archive into the containerd that serves the node's CRI endpoint, in the
k8s.io namespace where pods find their images, and print the names the images got. The
archive is a docker archive (as written by 'docker save') or a tar of an OCI image layout
whose index names the images. Short docker names are normalized (busybox:1 becomes
docker.io/library/busybox:1). Needs containerd's ctr command.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if endpoint == "" {
				endpoint = nodeRuntimeEndpoint(dataDir)
			}
			names, err := cri.ImportArchive(cmd.Context(), endpoint, args[0])
			if err != nil {
				return err
			}
			for _, n := range names {
				fmt.Fprintln(cmd.OutOrStdout(), n)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&endpoint, "runtime-endpoint", "", "CRI endpoint of the containerd to import into (default: the node's own containerd under DATA_DIR)")
	cmd.Flags().StringVar(&dataDir, "data-dir", cluster.DefaultDataDir(), "berth's data dir, whose node runs the containerd")
	return cmd
}

// nodeRuntimeEndpoint is where the containerd that a node agent starts for itself listens,
// for berth's data dir.
func nodeRuntimeEndpoint(dataDir string) string {
	return "unix://" + filepath.Join(dataDir, "node", "containerd", "containerd.sock")
}
