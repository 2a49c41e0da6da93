package check

import (
	"net/netip"
)

// addrClass says why an address is not a public unicast one; "" means it is.
type addrClass string

const (
	classPublic      addrClass = ""
	classLoopback    addrClass = "a loopback address"
	classPrivate     addrClass = "a private address"
	classLinkLocal   addrClass = "a link-local address"
	classMulticast   addrClass = "a multicast address"
	classUnspecified addrClass = "an unspecified address"
	classSharedCGNAT addrClass = "a shared (carrier-grade NAT) address"
	classMetadata    addrClass = "a cloud metadata address"
	classReserved    addrClass = "a reserved address"
	classBroadcast   addrClass = "a broadcast address"
)

type prefixClass struct {
	p     netip.Prefix
	class addrClass
}

// prefixes lists the non-public ranges, most specific first where they overlap.
var prefixes = []prefixClass{
	{netip.MustParsePrefix("0.0.0.0/8"), classUnspecified}, // "this network"; 0.0.0.0 reaches the host itself
	{netip.MustParsePrefix("127.0.0.0/8"), classLoopback},
	{netip.MustParsePrefix("10.0.0.0/8"), classPrivate},
	{netip.MustParsePrefix("172.16.0.0/12"), classPrivate},
	{netip.MustParsePrefix("192.168.0.0/16"), classPrivate},
	{netip.MustParsePrefix("100.64.0.0/10"), classSharedCGNAT},
	{netip.MustParsePrefix("169.254.0.0/16"), classLinkLocal},
	{netip.MustParsePrefix("192.0.0.0/24"), classReserved},    // IETF protocol assignments
	{netip.MustParsePrefix("192.0.2.0/24"), classReserved},    // documentation (TEST-NET-1)
	{netip.MustParsePrefix("198.51.100.0/24"), classReserved}, // documentation (TEST-NET-2)
	{netip.MustParsePrefix("203.0.113.0/24"), classReserved},  // documentation (TEST-NET-3)
	{netip.MustParsePrefix("198.18.0.0/15"), classReserved},   // benchmarking
	{netip.MustParsePrefix("224.0.0.0/4"), classMulticast},
	{netip.MustParsePrefix("255.255.255.255/32"), classBroadcast},
	{netip.MustParsePrefix("240.0.0.0/4"), classReserved},
	{netip.MustParsePrefix("::/128"), classUnspecified},
	{netip.MustParsePrefix("::1/128"), classLoopback},
	{netip.MustParsePrefix("fc00::/7"), classPrivate},  // unique local (RFC 4193)
	{netip.MustParsePrefix("fec0::/10"), classPrivate}, // deprecated site-local
	{netip.MustParsePrefix("fe80::/10"), classLinkLocal},
	{netip.MustParsePrefix("ff00::/8"), classMulticast},
	{netip.MustParsePrefix("64:ff9b:1::/48"), classPrivate}, // local-use NAT64 (RFC 8215)
	{netip.MustParsePrefix("100::/64"), classReserved},      // discard-only
	{netip.MustParsePrefix("2001:db8::/32"), classReserved}, // documentation
}

var (
	nat64      = netip.MustParsePrefix("64:ff9b::/96")   // well-known NAT64: the last 32 bits are IPv4
	localNAT64 = netip.MustParsePrefix("64:ff9b:1::/48") // local-use NAT64 (RFC 8215), any RFC 6052 length
	sixToFour  = netip.MustParsePrefix("2002::/16")      // 6to4: bits 16–48 are IPv4
	v4compat   = netip.MustParsePrefix("::/96")          // deprecated IPv4-compatible form
)

// judge says whether a is a public unicast address, and if not, what it is, naming the metadata
// endpoint it is. IPv6 forms that carry an IPv4 address (mapped, compatible, NAT64, 6to4) are
// judged by that address, so ::ffff:127.0.0.1 is as loopback as 127.0.0.1.
func judge(a netip.Addr) (addrClass, string) {
	a = a.WithZone("")
	if embedded, ok := embeddedIPv4(a); ok {
		return judge(embedded)
	}
	if localNAT64.Contains(a) {
		return judgeLocalNAT64(a)
	}
	if e, ok := metadataByAddr[a]; ok {
		return classMetadata, e.What
	}
	for _, pc := range prefixes {
		if pc.p.Contains(a) {
			return pc.class, ""
		}
	}
	if !a.IsValid() {
		return classUnspecified, ""
	}
	return classPublic, ""
}

// embeddedIPv4 returns the IPv4 address an IPv6 address stands for, if any.
func embeddedIPv4(a netip.Addr) (netip.Addr, bool) {
	if !a.Is6() {
		return netip.Addr{}, false
	}
	if a.Is4In6() {
		return a.Unmap(), true
	}
	b := a.As16()
	switch {
	case nat64.Contains(a):
		return netip.AddrFrom4([4]byte{b[12], b[13], b[14], b[15]}), true
	case sixToFour.Contains(a):
		return netip.AddrFrom4([4]byte{b[2], b[3], b[4], b[5]}), true
	case v4compat.Contains(a) && a != netip.IPv6Unspecified() && a != netip.IPv6Loopback():
		return netip.AddrFrom4([4]byte{b[12], b[13], b[14], b[15]}), true
	}
	return netip.Addr{}, false
}

// rfc6052Offsets are where an IPv4 address sits in an IPv6 address translated under a prefix of
// /48, /56, /64 and /96 (RFC 6052 §2.2: bits 64–71 are always skipped).
var rfc6052Offsets = [][4]int{
	{6, 7, 9, 10},
	{7, 9, 10, 11},
	{9, 10, 11, 12},
	{12, 13, 14, 15},
}

// judgeLocalNAT64 judges an address of the local-use NAT64 range. Which prefix length the
// network's translator uses cannot be known from here, so every IPv4 address the address could
// carry is checked: if any is one never allowed (metadata, link-local), so is this one (it is
// refused even when private targets are allowed); otherwise it is private, as the whole range is.
func judgeLocalNAT64(a netip.Addr) (addrClass, string) {
	b := a.As16()
	for _, off := range rfc6052Offsets {
		v4 := netip.AddrFrom4([4]byte{b[off[0]], b[off[1]], b[off[2]], b[off[3]]})
		if class, what := judge(v4); neverAllowed(class) {
			return class, what
		}
	}
	return classPrivate, ""
}
