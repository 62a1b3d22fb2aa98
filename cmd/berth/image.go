package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/berth-cluster/berth/pkg/cri"
	"github.com/berth-cluster/berth/pkg/cri/containerd"
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
	var endpoint string
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
	cmd.Flags().StringVar(&endpoint, "runtime-endpoint", containerd.DefaultEndpoint(), "CRI endpoint of the containerd to import into")
	return cmd
}
