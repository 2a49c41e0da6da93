package check

import "net/netip"

// MetadataEndpoint is an address where a cloud or its agents answer a machine's own questions:
// instance metadata, credentials, the host agent. A check never connects to one, whatever the
// settings: a prober running in that cloud would hand the caller its own secrets. Such an address
// may be public (Azure's WireServer) or sit inside a private range (Alibaba's), so a rule about
// ranges alone does not catch every one; this table does.
type MetadataEndpoint struct {
	Addr   netip.Addr
	What   string // whose, and what it serves
	Source string // where the address is documented; several are separated by "; "
}

// metadataEndpoints is the one table of them. The whole link-local ranges (169.254.0.0/16 and
// fe80::/10) are refused always as well (see neverAllowed), so a link-local endpoint missing
// here is refused all the same; it is listed to be named in the refusal. Judged after the
// IPv4-in-IPv6 forms are unwrapped (mapped, compatible, NAT64, 6to4: see classify).
var metadataEndpoints = []MetadataEndpoint{
	{netip.MustParseAddr("169.254.169.254"), "instance metadata: AWS, GCP, Azure, Oracle, OpenStack, DigitalOcean and others",
		"https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/instancedata-data-retrieval.html; https://cloud.google.com/compute/docs/metadata/overview; https://learn.microsoft.com/azure/virtual-machines/instance-metadata-service; https://docs.oracle.com/iaas/Content/Compute/Tasks/gettingmetadata.htm"},
	{netip.MustParseAddr("fd00:ec2::254"), "AWS instance metadata over IPv6",
		"https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/instancedata-data-retrieval.html"},
	{netip.MustParseAddr("169.254.170.2"), "AWS ECS task metadata and credentials",
		"https://docs.aws.amazon.com/AmazonECS/latest/developerguide/task-iam-roles.html"},
	{netip.MustParseAddr("169.254.170.23"), "AWS EKS Pod Identity credentials agent",
		"https://docs.aws.amazon.com/eks/latest/userguide/pod-id-agent-setup.html"},
	{netip.MustParseAddr("fd00:ec2::23"), "AWS EKS Pod Identity credentials agent over IPv6",
		"https://docs.aws.amazon.com/eks/latest/userguide/pod-id-agent-setup.html"},
	{netip.MustParseAddr("169.254.169.123"), "AWS time sync, on the metadata network",
		"https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/set-time.html"},
	{netip.MustParseAddr("fd00:ec2::123"), "AWS time sync over IPv6, on the metadata network",
		"https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/set-time.html"},
	{netip.MustParseAddr("fd20:ce::254"), "GCP instance metadata over IPv6, metadata.google.internal",
		"https://cloud.google.com/compute/docs/metadata/querying-metadata"},
	{netip.MustParseAddr("168.63.129.16"), "Azure WireServer host agent, a public address",
		"https://learn.microsoft.com/azure/virtual-network/what-is-ip-address-168-63-129-16"},
	{netip.MustParseAddr("100.100.100.200"), "Alibaba Cloud instance metadata",
		"https://www.alibabacloud.com/help/en/ecs/user-guide/view-instance-metadata"},
	{netip.MustParseAddr("169.254.0.23"), "Tencent Cloud instance metadata, metadata.tencentyun.com",
		"https://www.tencentcloud.com/document/product/213/4934"},
	{netip.MustParseAddr("169.254.42.42"), "Scaleway instance metadata",
		"https://cloudinit.readthedocs.io/en/latest/reference/datasources/scaleway.html"},
	{netip.MustParseAddr("fd00:42::42"), "Scaleway instance metadata over IPv6",
		"https://cloudinit.readthedocs.io/en/latest/reference/datasources/scaleway.html"},
	{netip.MustParseAddr("192.0.0.192"), "Oracle Cloud Infrastructure Classic instance metadata",
		"https://docs.oracle.com/en/cloud/iaas-classic/compute-iaas-cloud/stcsg/retrieving-instance-metadata.html"},
}

// MetadataEndpoints returns a copy of the table, for the help that documents it.
func MetadataEndpoints() []MetadataEndpoint {
	return append([]MetadataEndpoint(nil), metadataEndpoints...)
}

// metadataByAddr indexes the table.
var metadataByAddr = func() map[netip.Addr]MetadataEndpoint {
	m := make(map[netip.Addr]MetadataEndpoint, len(metadataEndpoints))
	for _, e := range metadataEndpoints {
		m[e.Addr] = e
	}
	return m
}()

// neverAllowed are the classes refused even when private targets are allowed: a test network
// needs loopback and private ranges, never the machine's own metadata or link-local services.
func neverAllowed(c addrClass) bool {
	return c == classMetadata || c == classLinkLocal
}
