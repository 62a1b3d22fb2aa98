package ipaddress

// ManagedByAllocator is the value of the networkingv1.LabelManagedBy label on the
// addresses the ClusterIP allocator creates; it leaves addresses with another manager
// alone. Upstream calls it ipallocator.ControllerName.
const ManagedByAllocator = "ipallocator.k8s.io"
