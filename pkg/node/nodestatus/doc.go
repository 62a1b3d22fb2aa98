// Package nodestatus is the node agent's report on itself to the API server, seed 000's
// syncNodeStatus (every nodeStatusUpdateFrequency), fastStatusUpdateOnce (right after start,
// until the node is Ready) and nodeLeaseController, with the runtime state updateRuntimeUp
// writes and the Ready condition reads.
//
//   - Controller.Run registers the Node (registerWithAPIServer), then keeps its status and its
//     Lease current. GetNode serves the node agent's other parts (admission, the pod CIDR).
//   - The status is computed by pure setters (setters.go): addresses, capacity and
//     allocatable, node info, images, daemon endpoints, and the MemoryPressure, DiskPressure,
//     PIDPressure and Ready conditions with the kubelet's reasons, messages and events.
//   - RuntimeState holds what the runtime last said (RuntimeReady, NetworkReady, the time of
//     the last good check).
package nodestatus
