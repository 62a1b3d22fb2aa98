// Package poddisruptionbudget is the registry of policy/v1 PodDisruptionBudgets: their
// validation (upstream's pkg/apis/policy/validation), strategies, table and storage, and the
// narrow view of the store (Budgets) through which pods/eviction reads budgets and spends
// them.
//
// In the API server's flow (decode → default → validate → admit → store) it owns the validate
// step for /apis/policy/v1/namespaces/{ns}/poddisruptionbudgets and their status. The
// disruption controller, which computes status.disruptionsAllowed, is not here.
package poddisruptionbudget
