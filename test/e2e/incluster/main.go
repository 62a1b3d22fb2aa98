// Command incluster is the e2e tests' in-cluster client: what an operator or controller does
// first in a pod. It builds its configuration with client-go's rest.InClusterConfig (the
// KUBERNETES_SERVICE_HOST/PORT variables, the service-account token and CA the node agent
// mounted), lists the pods of its own namespace, and prints what happened.
package main

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

const namespaceFile = "/var/run/secrets/kubernetes.io/serviceaccount/namespace"

func main() {
	if err := run(); err != nil {
		fmt.Println("error:", err)
		os.Exit(1)
	}
}

func run() error {
	config, err := rest.InClusterConfig()
	if err != nil {
		return fmt.Errorf("in-cluster config: %w", err)
	}
	ns, err := os.ReadFile(namespaceFile)
	if err != nil {
		return err
	}
	client, err := kubernetes.NewForConfig(config)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	pods, err := client.CoreV1().Pods(strings.TrimSpace(string(ns))).List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	fmt.Printf("listed %d pods in %s\n", len(pods.Items), ns)
	return nil
}
