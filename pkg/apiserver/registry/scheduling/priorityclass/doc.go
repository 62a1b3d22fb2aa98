// Package priorityclass is the registry of priority classes (scheduling.k8s.io/v1): their
// defaults and validation, their strategy and storage, and the built-in system classes.
//
// In the API server's flow (decode → default → validate → admit → store) it owns the
// default and validate steps for priority classes, whose values the scheduler's queue
// and preemption order pods by.
package priorityclass
