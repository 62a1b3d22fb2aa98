// Package config is the node agent's pod configuration: the configCh of seed 000's
// syncLoopIteration. "该模块将同时 watch 3 个不同来源的 pod 信息的变化（file，http，apiserver）":
// it watches three sources of pods at once and, whenever one of them changes, puts the
// changed pods and what happened to them on one channel.
//
//	file dir ──► NewSourceFile ─┐ SET snapshots
//	http URL ──► NewSourceURL ──┼──► PodConfig.Channel(source) ──► merge ──► Updates()
//	apiserver ─► NewSourceApiserver ┘ SET, then ADD/UPDATE/REMOVE       ADD, UPDATE, DELETE,
//	                                                                   REMOVE, RECONCILE
//
// The file and http sources build static pods (their manifests defaulted and validated as
// the API server would, renamed <name>-<node>, with a UID hashed from the manifest, the node
// and where it came from); the apiserver source watches the pods bound to the node. PodConfig
// keeps each source's pods by UID and turns what the sources send into the minimal updates
// the syncLoop dispatches (HandlePodAdditions, HandlePodUpdates, HandlePodRemoves,
// HandlePodReconcile). SourcesReady tells housekeeping when every source has been heard from,
// so that it does not clean up pods a slow source has not reported yet.
package config

// Component names the config sources in berth_recovered_panics_total.
const Component = "config"
