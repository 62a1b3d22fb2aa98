// Command pause is the suite's registry.k8s.io/pause image: it waits until it is told to
// stop, and stops at once on SIGINT or SIGTERM, as upstream's pause does.
package main

import (
	"os"
	"os/signal"
	"syscall"
)

func main() {
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)
	<-sig
}
