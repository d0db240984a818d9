/*-------------------------------------------------------------------------
 *
 * fuzz_netaddr.c
 *	  Fuzz target: address parsing, formatting and classification
 *	  (src/common/netaddr.c), the core of queryclaw.block_local.
 *
 * The input is tried as an address literal and, from its bytes, as a raw
 * IPv4 and IPv6 address.  Properties checked besides memory safety:
 * formatting and parsing round-trip; an IPv4 address gets the same verdict
 * in every IPv6 form that embeds it (mapped, compatible, NAT64, 6to4), so
 * no spelling reaches a non-public address; a refusal always names a range;
 * an address lies in every prefix of itself.
 *
 *-------------------------------------------------------------------------
 */
#include <string.h>
#include <sys/socket.h>

#include "fuzz.h"
#include "netaddr.h"

/* Classify, and check that the verdict and the reasons agree. */
static bool
classify(const QcInetAddr *addr)
{
	QcAddrClass cls;
	bool		public = qc_inet_classify(addr, &cls);

	FUZZ_CHECK(public == (cls.range == NULL), "a verdict without a reason");
	if (cls.via != NULL)
	{
		QcAddrClass inner;

		FUZZ_CHECK(addr->family == AF_INET6, "an embedded address in IPv4");
		FUZZ_CHECK(!qc_inet_classify(&cls.embedded, &inner),
				   "an embedded address blamed but public");
	}
	return public;
}

static void
check_round_trip(const QcInetAddr *addr)
{
	char		text[64];
	QcInetAddr	again;

	qc_inet_format(addr, text, sizeof(text));
	FUZZ_CHECK(qc_inet_parse(text, &again), "formatted address does not parse");
	FUZZ_CHECK(memcmp(addr, &again, sizeof(again)) == 0, "round trip changed the address");
}

static void
check_prefixes(const QcInetAddr *addr)
{
	int			bits = addr->family == AF_INET ? 32 : 128;

	for (int b = 0; b <= bits; b++)
		FUZZ_CHECK(qc_inet_in_prefix(addr, addr, b), "an address outside its own prefix");
}

/* An IPv6 address: prefix bytes, then the IPv4 address at offset at. */
static QcInetAddr
ipv6_form(const uint8_t *prefix, size_t prefixlen, const uint8_t *v4, int at)
{
	QcInetAddr	a6 = {.family = AF_INET6};

	memcpy(a6.bytes, prefix, prefixlen);
	memcpy(a6.bytes + at, v4, 4);
	return a6;
}

/*
 * The verdict on an IPv4 address, and on the IPv6 forms that embed it: the
 * same for mapped, NAT64, 6to4 and (but for ::, ::1) compatible forms; a
 * refusal for a Teredo address whose server is not public.
 */
static void
check_embeddings(const uint8_t *v4)
{
	static const uint8_t mapped[] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xFF, 0xFF};
	static const uint8_t nat64[] = {0, 0x64, 0xFF, 0x9B};
	static const uint8_t sixto4[] = {0x20, 0x02};
	static const uint8_t teredo[] = {0x20, 0x01, 0, 0};
	static const uint8_t none[] = {0};
	QcInetAddr	a4 = {.family = AF_INET};
	QcInetAddr	a6;
	bool		public;

	memcpy(a4.bytes, v4, 4);
	public = classify(&a4);
	check_round_trip(&a4);
	check_prefixes(&a4);

	a6 = ipv6_form(mapped, sizeof(mapped), v4, 12);
	FUZZ_CHECK(classify(&a6) == public, "IPv4-mapped form changes the verdict");
	a6 = ipv6_form(nat64, sizeof(nat64), v4, 12);
	FUZZ_CHECK(classify(&a6) == public, "NAT64 form changes the verdict");
	a6 = ipv6_form(sixto4, sizeof(sixto4), v4, 2);
	FUZZ_CHECK(classify(&a6) == public, "6to4 form changes the verdict");
	a6 = ipv6_form(none, 0, v4, 12);
	if ((v4[0] | v4[1] | v4[2]) != 0)
		FUZZ_CHECK(classify(&a6) == public, "IPv4-compatible form changes the verdict");
	a6 = ipv6_form(teredo, sizeof(teredo), v4, 4);
	if (!public)
		FUZZ_CHECK(!classify(&a6), "Teredo reaches a non-public server");
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char		text[128];
	QcInetAddr	addr;

	if (size < sizeof(text))
	{
		memcpy(text, data, size);
		text[size] = '\0';
		if (qc_inet_parse(text, &addr))
		{
			classify(&addr);
			check_round_trip(&addr);
			check_prefixes(&addr);
		}
	}
	if (size >= 4)
		check_embeddings(data);
	if (size >= 16)
	{
		memset(&addr, 0, sizeof(addr));
		addr.family = AF_INET6;
		memcpy(addr.bytes, data, 16);
		classify(&addr);
		check_round_trip(&addr);
	}
	return 0;
}
