/*-------------------------------------------------------------------------
 *
 * netaddr.c
 *	  Decide whether an IP address is public, following the IANA IPv4 and
 *	  IPv6 special-purpose address registries.
 *
 * This is the core of queryclaw.block_local: every address the extension is
 * about to connect to passes through qc_inet_classify().  Anything that is
 * not plainly global unicast is refused, including IPv4 addresses embedded in
 * IPv6 forms (mapped, compatible, NAT64, 6to4, Teredo), so that
 * http://[::ffff:127.0.0.1]/ cannot reach the loopback interface.
 *
 * No PostgreSQL headers here: the file is unit tested and fuzzed on its own.
 *
 *-------------------------------------------------------------------------
 */
#include "netaddr.h"

#include <arpa/inet.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

/* One special-purpose range: a prefix and the name a refusal reports. */
typedef struct QcRange
{
	const char *prefix;			/* textual network address */
	int			bits;
	const char *name;
} QcRange;

/*
 * IPv4 ranges that are not public.  More specific entries come first, so
 * that the cloud metadata address is reported as such rather than as
 * link-local.
 */
static const QcRange ipv4_ranges[] = {
	{"169.254.169.254", 32, "cloud metadata"},
	{"100.100.100.200", 32, "cloud metadata"},
	{"255.255.255.255", 32, "broadcast"},
	{"0.0.0.0", 8, "unspecified (this network)"},
	{"10.0.0.0", 8, "private"},
	{"100.64.0.0", 10, "shared address space (CGNAT)"},
	{"127.0.0.0", 8, "loopback"},
	{"169.254.0.0", 16, "link-local"},
	{"172.16.0.0", 12, "private"},
	{"192.0.0.0", 24, "IETF protocol assignments"},
	{"192.0.2.0", 24, "documentation"},
	{"192.88.99.0", 24, "6to4 relay anycast"},
	{"192.168.0.0", 16, "private"},
	{"198.18.0.0", 15, "benchmarking"},
	{"198.51.100.0", 24, "documentation"},
	{"203.0.113.0", 24, "documentation"},
	{"224.0.0.0", 4, "multicast"},
	{"240.0.0.0", 4, "reserved"},
};

/*
 * IPv6 ranges that are not public.  The forms that embed an IPv4 address
 * are handled separately, before this table is consulted; whatever lies
 * outside 2000::/3 (global unicast) and is not listed is "reserved".
 */
static const QcRange ipv6_ranges[] = {
	{"fd00:ec2::254", 128, "cloud metadata"},
	{"::", 128, "unspecified"},
	{"::1", 128, "loopback"},
	{"64:ff9b:1::", 48, "local-use NAT64"},
	{"100::", 64, "discard-only"},
	{"2001:2::", 48, "benchmarking"},
	{"2001:db8::", 32, "documentation"},
	{"2001::", 23, "IETF protocol assignments"},
	{"3fff::", 20, "documentation"},
	{"fc00::", 7, "unique local"},
	{"fe80::", 10, "link-local"},
	{"fec0::", 10, "site-local"},
	{"ff00::", 8, "multicast"},
};


bool
qc_inet_from_sockaddr(const struct sockaddr *sa, QcInetAddr *out, int *port)
{
	memset(out, 0, sizeof(*out));
	out->family = sa->sa_family;
	if (sa->sa_family == AF_INET)
	{
		const struct sockaddr_in *in = (const struct sockaddr_in *) sa;

		memcpy(out->bytes, &in->sin_addr, 4);
		if (port != NULL)
			*port = ntohs(in->sin_port);
		return true;
	}
	if (sa->sa_family == AF_INET6)
	{
		const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *) sa;

		memcpy(out->bytes, &in6->sin6_addr, 16);
		if (port != NULL)
			*port = ntohs(in6->sin6_port);
		return true;
	}
	return false;
}

bool
qc_inet_parse(const char *text, QcInetAddr *out)
{
	memset(out, 0, sizeof(*out));
	if (inet_pton(AF_INET, text, out->bytes) == 1)
	{
		out->family = AF_INET;
		return true;
	}
	if (inet_pton(AF_INET6, text, out->bytes) == 1)
	{
		out->family = AF_INET6;
		return true;
	}
	return false;
}

void
qc_inet_format(const QcInetAddr *addr, char *buf, size_t buflen)
{
	if (inet_ntop(addr->family, addr->bytes, buf, buflen) == NULL)
		snprintf(buf, buflen, "?");
}

bool
qc_inet_in_prefix(const QcInetAddr *addr, const QcInetAddr *net, int prefix)
{
	int			full = prefix / 8;
	int			rest = prefix % 8;

	if (addr->family != net->family)
		return false;
	if (memcmp(addr->bytes, net->bytes, full) != 0)
		return false;
	if (rest == 0)
		return true;
	return ((addr->bytes[full] ^ net->bytes[full]) & (0xFF << (8 - rest))) == 0;
}

/* Look addr up in a range table; returns the range name or NULL. */
static const char *
match_ranges(const QcInetAddr *addr, const QcRange *ranges, int nranges)
{
	for (int i = 0; i < nranges; i++)
	{
		QcInetAddr	net;

		if (qc_inet_parse(ranges[i].prefix, &net) &&
			qc_inet_in_prefix(addr, &net, ranges[i].bits))
			return ranges[i].name;
	}
	return NULL;
}

/* Build an IPv4 address from four bytes, optionally inverted (Teredo). */
static void
make_ipv4(QcInetAddr *out, const uint8_t *src, bool invert)
{
	memset(out, 0, sizeof(*out));
	out->family = AF_INET;
	for (int i = 0; i < 4; i++)
		out->bytes[i] = invert ? (uint8_t) ~src[i] : src[i];
}

/*
 * If addr is an IPv6 form that carries an IPv4 address, return the form's
 * name and the first embedded address (Teredo carries two: the server, and
 * the client obfuscated by inversion; *second receives the client).
 */
static const char *
embedded_ipv4(const QcInetAddr *addr, QcInetAddr *first, QcInetAddr *second)
{
	static const uint8_t zeros[12] = {0};
	static const uint8_t mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xFF, 0xFF};
	static const uint8_t nat64[12] = {0, 0x64, 0xFF, 0x9B, 0, 0, 0, 0, 0, 0, 0, 0};
	const uint8_t *b = addr->bytes;

	second->family = 0;
	if (memcmp(b, mapped, 12) == 0)
	{
		make_ipv4(first, b + 12, false);
		return "IPv4-mapped";
	}
	if (memcmp(b, nat64, 12) == 0)
	{
		make_ipv4(first, b + 12, false);
		return "NAT64";
	}
	/* ::a.b.c.d, but not :: and ::1, which the range table names */
	if (memcmp(b, zeros, 12) == 0 && (b[12] | b[13] | b[14]) != 0)
	{
		make_ipv4(first, b + 12, false);
		return "IPv4-compatible";
	}
	if (b[0] == 0x20 && b[1] == 0x02)
	{
		make_ipv4(first, b + 2, false);
		return "6to4";
	}
	if (b[0] == 0x20 && b[1] == 0x01 && b[2] == 0 && b[3] == 0)
	{
		make_ipv4(first, b + 4, false);
		make_ipv4(second, b + 12, true);
		return "Teredo";
	}
	return NULL;
}

bool
qc_inet_classify(const QcInetAddr *addr, QcAddrClass *cls)
{
	memset(cls, 0, sizeof(*cls));

	if (addr->family == AF_INET)
	{
		cls->range = match_ranges(addr, ipv4_ranges,
								  sizeof(ipv4_ranges) / sizeof(ipv4_ranges[0]));
		return cls->range == NULL;
	}

	if (addr->family == AF_INET6)
	{
		QcInetAddr	first,
					second;
		const char *via = embedded_ipv4(addr, &first, &second);

		if (via != NULL)
		{
			QcAddrClass inner;
			const QcInetAddr *bad = NULL;

			if (!qc_inet_classify(&first, &inner))
				bad = &first;
			else if (second.family != 0 && !qc_inet_classify(&second, &inner))
				bad = &second;
			if (bad != NULL)
			{
				cls->range = inner.range;
				cls->via = via;
				cls->embedded = *bad;
				return false;
			}
			/* the Teredo prefix itself is an IETF assignment: public otherwise */
			return true;
		}

		cls->range = match_ranges(addr, ipv6_ranges,
								  sizeof(ipv6_ranges) / sizeof(ipv6_ranges[0]));
		if (cls->range == NULL && (addr->bytes[0] & 0xE0) != 0x20)
			cls->range = "reserved";
		return cls->range == NULL;
	}

	cls->range = "unknown address family";
	return false;
}
