package servicecidr

const (
	// DefaultName is the name of the ServiceCIDR that holds the API server's
	// --service-cluster-ip-range. Upstream calls it
	// defaultservicecidr.DefaultServiceCIDRName.
	DefaultName = "kubernetes"

	// ProtectionFinalizer keeps a ServiceCIDR while IP addresses in it are taken; the
	// servicecidrs controller adds it and removes it once the range is unused or another
	// range covers those addresses. Upstream calls it
	// servicecidrs.ServiceCIDRProtectionFinalizer.
	ProtectionFinalizer = "networking.k8s.io/service-cidr-finalizer"
)
