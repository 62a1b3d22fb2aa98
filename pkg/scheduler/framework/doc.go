// Package framework is the scheduling framework's contract: the extension points a plugin
// implements, the Status it answers with, the CycleState it shares within one scheduling
// cycle, and the NodeInfo/PodInfo views of the cluster it reads.
//
// In seed 003's scheduleOne the points come in this order. The scheduling cycle, one pod at a
// time:
//
//	PreEnqueue (may the pod enter activeQ?) · QueueSort (which pod first?)
//	PreFilter → Filter (findNodesThatFitPod) → PostFilter (preemption, when no node fits)
//	PreScore → Score → NormalizeScore (prioritizeNodes) → selectHost
//	assume → Reserve → Permit
//
// then the binding cycle, in its own goroutine:
//
//	WaitOnPermit → PreBind → Bind → PostBind   (Unreserve on any failure)
//
// The runtime that calls the plugins lives in framework/runtime; the plugins in plugins/.
package framework
