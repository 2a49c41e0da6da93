package check

import (
	"net/netip"
	"testing"

	"github.com/stretchr/testify/assert"
)

// classify is judge without the endpoint's name.
func classify(a netip.Addr) addrClass {
	class, _ := judge(a)
	return class
}

// These addresses are only classified, never contacted.
func TestClassifySortsAddressesByWhyTheyAreRefused(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		addr string
		want addrClass
	}{
		{"127.0.0.1 is loopback", "127.0.0.1", classLoopback},
		{"any 127/8 address is loopback", "127.3.2.1", classLoopback},
		{"::1 is loopback", "::1", classLoopback},
		{"an IPv4-mapped loopback is still loopback", "::ffff:127.0.0.1", classLoopback},
		{"an IPv4-compatible loopback is still loopback", "::127.0.0.1", classLoopback},
		{"a NAT64 loopback is still loopback", "64:ff9b::7f00:1", classLoopback},
		{"a 6to4 loopback is still loopback", "2002:7f00:1::1", classLoopback},
		{"10/8 is private", "10.1.2.3", classPrivate},
		{"172.16/12 is private at its start", "172.16.0.1", classPrivate},
		{"172.16/12 is private at its end", "172.31.255.255", classPrivate},
		{"192.168/16 is private", "192.168.1.1", classPrivate},
		{"an IPv4-mapped private address is private", "::ffff:10.0.0.1", classPrivate},
		{"a unique local IPv6 address is private", "fd12:3456::1", classPrivate},
		{"fc00::/7 includes fc00::", "fc00::1", classPrivate},
		{"169.254/16 is link-local", "169.254.1.1", classLinkLocal},
		{"fe80::/10 is link-local", "fe80::1", classLinkLocal},
		{"the AWS, GCP and Azure metadata address is metadata", "169.254.169.254", classMetadata},
		{"the ECS task metadata address is metadata", "169.254.170.2", classMetadata},
		{"the AWS IPv6 metadata address is metadata", "fd00:ec2::254", classMetadata},
		{"the Alibaba metadata address is metadata", "100.100.100.200", classMetadata},
		{"an IPv4-mapped metadata address is metadata", "::ffff:169.254.169.254", classMetadata},
		{"224/4 is multicast", "224.0.0.1", classMulticast},
		{"ff00::/8 is multicast", "ff02::1", classMulticast},
		{"0.0.0.0 is unspecified", "0.0.0.0", classUnspecified},
		{"0/8 is unspecified", "0.1.2.3", classUnspecified},
		{":: is unspecified", "::", classUnspecified},
		{"100.64/10 is carrier-grade NAT", "100.64.0.1", classSharedCGNAT},
		{"the end of 100.64/10 is carrier-grade NAT", "100.127.255.254", classSharedCGNAT},
		{"255.255.255.255 is broadcast", "255.255.255.255", classBroadcast},
		{"240/4 is reserved", "240.0.0.1", classReserved},
		{"a documentation IPv4 address is reserved", "192.0.2.1", classReserved},
		{"a documentation IPv6 address is reserved", "2001:db8::1", classReserved},
		{"a zoned link-local address is link-local", "fe80::1%eth0", classLinkLocal},
		{"a public IPv4 address is public", "8.8.8.8", classPublic},
		{"just past 172.16/12 is public", "172.32.0.1", classPublic},
		{"just past 100.64/10 is public", "100.128.0.1", classPublic},
		{"a public IPv6 address is public", "2606:4700:4700::1111", classPublic},
		{"an IPv4-mapped public address is public", "::ffff:8.8.8.8", classPublic},
		{"a NAT64 public address is public", "64:ff9b::808:808", classPublic},
		{"a local-use NAT64 address is private", "64:ff9b:1::808:808", classPrivate},
		{"a local-use NAT64 metadata address (/96) is metadata", "64:ff9b:1::a9fe:a9fe", classMetadata},
		{"a local-use NAT64 metadata address (/48) is metadata", "64:ff9b:1:a9fe:a9:fe00::", classMetadata},
		{"a local-use NAT64 metadata address (/56) is metadata", "64:ff9b:1:1a9:fe:a9fe::", classMetadata},
		{"a local-use NAT64 metadata address (/64) is metadata", "64:ff9b:1:1:a9:fea9:fe00:0", classMetadata},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			assert.Equal(t, tc.want, classify(netip.MustParseAddr(tc.addr)))
		})
	}
}

func TestAllowingPrivateTargetsNeverAllowsMetadata(t *testing.T) {
	t.Parallel()
	open := defaultPolicy(true)
	strict := defaultPolicy(false)
	loop := netip.MustParseAddrPort("127.0.0.1:80")
	meta := netip.MustParseAddrPort("169.254.169.254:80")
	mappedMeta := netip.MustParseAddrPort("[::ffff:169.254.169.254]:80")

	assert.NoError(t, open(loop), "loopback is allowed with private targets")
	assert.ErrorContains(t, strict(loop), "refused: 127.0.0.1 is a loopback address")
	assert.ErrorContains(t, open(meta), "a cloud metadata address")
	assert.ErrorContains(t, open(mappedMeta), "a cloud metadata address")
	assert.NoError(t, strict(netip.MustParseAddrPort("8.8.8.8:443")), "a public address is allowed")
}

// 169.254.169.254 behind a local-use NAT64 prefix is refused even when private targets are
// allowed, as the metadata address itself is.
func TestALocalUseNAT64MetadataAddressIsRefusedUnderAllowPrivate(t *testing.T) {
	t.Parallel()
	allow := defaultPolicy(true)
	var refused *RefusedError
	assert.ErrorAs(t, allow(netip.MustParseAddrPort("[64:ff9b:1::a9fe:a9fe]:80")), &refused)
	assert.NoError(t, allow(netip.MustParseAddrPort("[64:ff9b:1::a00:1]:80")), "a private address behind it is allowed")
}
