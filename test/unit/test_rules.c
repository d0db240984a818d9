/*
 * test_rules.c
 *	  Unit tests of the pure C policy parts (netaddr.c, hostname.c, rules.c):
 *	  address classification, socket addresses, host mapping, and the list
 *	  settings' syntax, with no server.
 *
 * Prints one "ok N - ..." or "not ok N - ..." line per case and exits
 * non-zero when any case fails.
 */
#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>

#include "hostname.h"
#include "netaddr.h"
#include "rules.h"

static int	ncase = 0;
static int	nfail = 0;

static void
check(int cond, const char *what, const char *arg)
{
	ncase++;
	if (!cond)
		nfail++;
	printf("%s %d - %s %s\n", cond ? "ok" : "not ok", ncase, what, arg);
}

/* address, expected range name (NULL = public) */
static const char *const classify_cases[][2] = {
	{"8.8.8.8", NULL},
	{"93.184.216.34", NULL},
	{"127.0.0.1", "loopback"},
	{"127.255.255.254", "loopback"},
	{"10.1.2.3", "private"},
	{"172.16.0.1", "private"},
	{"172.31.255.255", "private"},
	{"172.32.0.1", NULL},
	{"192.168.1.100", "private"},
	{"100.64.0.1", "shared address space (CGNAT)"},
	{"169.254.169.254", "cloud metadata"},
	{"169.254.1.1", "link-local"},
	{"0.0.0.0", "unspecified (this network)"},
	{"192.0.2.1", "documentation"},
	{"198.18.5.5", "benchmarking"},
	{"224.0.0.1", "multicast"},
	{"240.0.0.1", "reserved"},
	{"255.255.255.255", "broadcast"},
	{"2606:4700::1111", NULL},
	{"::1", "loopback"},
	{"::", "unspecified"},
	{"fc00::1", "unique local"},
	{"fd12:3456::1", "unique local"},
	{"fd00:ec2::254", "cloud metadata"},
	{"fe80::1", "link-local"},
	{"fec0::1", "site-local"},
	{"ff02::1", "multicast"},
	{"2001:db8::1", "documentation"},
	{"::ffff:127.0.0.1", "loopback"},
	{"::ffff:10.0.0.1", "private"},
	{"::ffff:8.8.8.8", NULL},
	{"::127.0.0.1", "loopback"},
	{"64:ff9b::a9fe:a9fe", "cloud metadata"},
	{"64:ff9b::808:808", NULL},
	{"2002:7f00:1::", "loopback"},
	{"2002:c0a8:0101::1", "private"},
	{"2002:808:808::1", NULL},
	{"2001:0:4136:e378:8000:63bf:80ff:fffe", "loopback"},	/* client 127.0.0.1 */
	{"4000::1", "reserved"},
};

static void
test_classify(void)
{
	for (size_t i = 0; i < sizeof(classify_cases) / sizeof(classify_cases[0]); i++)
	{
		QcInetAddr	addr;
		QcAddrClass cls;
		const char *want = classify_cases[i][1];
		int			parsed = qc_inet_parse(classify_cases[i][0], &addr);
		int			public = parsed && qc_inet_classify(&addr, &cls);
		int			good = parsed &&
			(want == NULL ? public : (!public && strcmp(cls.range, want) == 0));

		check(good, "classify", classify_cases[i][0]);
	}
}

static void
test_addr_lists(void)
{
	char		err[256];
	QcAddrList *list = qc_addr_list_parse("127.0.0.1:8080, 10.1.0.0/16 [::1]:9000 fd00::/8",
										  err, sizeof(err));
	QcInetAddr	a;

	check(list != NULL && list->count == 4, "parse address list", "4 entries");
	qc_inet_parse("127.0.0.1", &a);
	check(qc_addr_list_match(list, &a, 8080) != NULL, "allowlist port match", "127.0.0.1:8080");
	check(qc_addr_list_match(list, &a, 8081) == NULL, "allowlist port mismatch", "127.0.0.1:8081");
	qc_inet_parse("10.1.200.3", &a);
	check(qc_addr_list_match(list, &a, 443) != NULL, "allowlist CIDR", "10.1.200.3");
	qc_inet_parse("10.2.0.1", &a);
	check(qc_addr_list_match(list, &a, 443) == NULL, "allowlist outside CIDR", "10.2.0.1");
	qc_inet_parse("::1", &a);
	check(qc_addr_list_match(list, &a, 9000) != NULL, "allowlist IPv6 port", "[::1]:9000");
	qc_inet_parse("fdab::1", &a);
	check(qc_addr_list_match(list, &a, 1) != NULL, "allowlist IPv6 CIDR", "fdab::1");
	free(list);

	list = qc_addr_list_parse("", err, sizeof(err));
	check(list != NULL && list->count == 0, "parse empty list", "''");
	free(list);

	check(qc_addr_list_parse("example.com", err, sizeof(err)) == NULL, "refuse host name", err);
	check(qc_addr_list_parse("10.0.0.0/33", err, sizeof(err)) == NULL, "refuse prefix", err);
	check(qc_addr_list_parse("127.0.0.1:99999", err, sizeof(err)) == NULL, "refuse port", err);
	check(qc_addr_list_parse("[::1", err, sizeof(err)) == NULL, "refuse bracket", err);
}

static void
test_host_lists(void)
{
	char		err[256];
	QcHostList *list = qc_host_list_parse("Example.COM., *.corp.example:8443, 127.0.0.1",
										  err, sizeof(err));

	check(list != NULL && list->count == 3, "parse host list", "3 entries");
	check(qc_host_list_match(list, "example.com", 80) != NULL, "host exact", "example.com");
	check(qc_host_list_match(list, "www.example.com", 80) == NULL, "host no implicit subdomain", "www.example.com");
	check(qc_host_list_match(list, "a.corp.example", 8443) != NULL, "wildcard", "a.corp.example:8443");
	check(qc_host_list_match(list, "a.b.corp.example", 8443) != NULL, "wildcard deep", "a.b.corp.example:8443");
	check(qc_host_list_match(list, "corp.example", 8443) == NULL, "wildcard excludes apex", "corp.example");
	check(qc_host_list_match(list, "a.corp.example", 443) == NULL, "wildcard port", "a.corp.example:443");
	check(qc_host_list_match(list, "evilcorp.example", 8443) == NULL, "wildcard suffix trick", "evilcorp.example");
	check(qc_host_list_match(list, "127.0.0.1", 1) != NULL, "literal address entry", "127.0.0.1");
	free(list);

	check(qc_host_list_parse("exa mple", err, sizeof(err)) != NULL, "space separates entries", "exa mple");
	check(qc_host_list_parse("bad/host", err, sizeof(err)) == NULL, "refuse slash", err);
	check(qc_host_list_parse("a..b", err, sizeof(err)) == NULL, "refuse empty label", err);
	/* found by test/fuzz: a name left with a final dot could never match */
	check(qc_host_list_parse("example.com..", err, sizeof(err)) == NULL, "refuse two final dots", err);
	check(qc_host_list_parse("host:0", err, sizeof(err)) == NULL, "refuse port 0", err);

	/* entries are mapped as URLs are: either spelling matches the other */
	list = qc_host_list_parse("\xef\xbd\x85\xef\xbd\x98\xef\xbd\x81\xef\xbd\x8d\xef\xbd\x90\xef\xbd\x8c\xef\xbd\x85\xe3\x80\x82" "com, "
							  "*.b\xc3\xbc" "cher.de, xn--fa-hia.de, 0x7f.1, [::1]:8080",
							  err, sizeof(err));
	check(list != NULL && list->count == 5, "parse Unicode host list", "5 entries");
	check(qc_host_list_match(list, "example.com", 80) != NULL, "full-width entry", "example.com");
	check(qc_host_list_match(list, "www.xn--bcher-kva.de", 80) != NULL, "Unicode wildcard", "www.xn--bcher-kva.de");
	check(qc_host_list_match(list, "xn--fa-hia.de", 80) != NULL, "A-label entry", "xn--fa-hia.de");
	check(qc_host_list_match(list, "127.0.0.1", 80) != NULL, "IPv4 form entry", "127.0.0.1");
	check(qc_host_list_match(list, "::1", 8080) != NULL, "IPv6 entry", "::1");
	free(list);
	check(qc_host_list_parse("10.0.0.999", err, sizeof(err)) == NULL, "refuse bad IPv4", err);
	check(qc_host_list_parse("*.10.0.0.1", err, sizeof(err)) == NULL, "refuse wildcard address", err);
}

/* host as a URL spells it, and what it maps to (NULL: not a valid host) */
static const char *const host_cases[][2] = {
	{"example.com", "example.com"},
	{"EXAMPLE.Com.", "example.com"},
	{"\xef\xbd\x85\xef\xbd\x98\xef\xbd\x81\xef\xbd\x8d\xef\xbd\x90\xef\xbd\x8c\xef\xbd\x85\xef\xbc\x8e\xef\xbd\x83\xef\xbd\x8f\xef\xbd\x8d",
	"example.com"},				/* full width, full-width full stop */
	{"example\xe3\x80\x82" "com", "example.com"},	/* ideographic full stop */
	{"example\xef\xbd\xa1" "com", "example.com"},	/* halfwidth ideographic full stop */
	{"b\xc3\xbc" "cher.de", "xn--bcher-kva.de"},
	{"B\xc3\x9c" "CHER.DE", "xn--bcher-kva.de"},
	{"xn--bcher-kva.de", "xn--bcher-kva.de"},
	{"fa\xc3\x9f.de", "xn--fa-hia.de"},	/* non-transitional: sharp s kept */
	{"\xef\xbd\x8c\xef\xbd\x8f\xef\xbd\x83\xef\xbd\x81\xef\xbd\x8c\xef\xbd\x88\xef\xbd\x8f\xef\xbd\x93\xef\xbd\x94",
	"localhost"},
	{"my_host.example", "my_host.example"},
	{"example.123abc", "example.123abc"},
	{"\xef\xbc\x91\xef\xbc\x92\xef\xbc\x97\xef\xbc\x8e\xef\xbc\x90\xef\xbc\x8e\xef\xbc\x90\xef\xbc\x8e\xef\xbc\x91",
	"127.0.0.1"},				/* full-width 127.0.0.1 */
	{"127.0.0.1.", "127.0.0.1"},
	{"0x7f.1", "127.0.0.1"},
	{"0X7F.0.0.1", "127.0.0.1"},
	{"2130706433", "127.0.0.1"},
	{"0177.0.0.1", "127.0.0.1"},
	{"017700000001", "127.0.0.1"},
	{"127.1", "127.0.0.1"},
	{"10.1.513", "10.1.2.1"},
	{"4294967295", "255.255.255.255"},
	{"0x", "0.0.0.0"},
	{"[::FFFF:127.0.0.1]", "::ffff:127.0.0.1"},
	{"::1", "::1"},
	{"10.0.0.999", NULL},
	{"0x1ffffffff", NULL},
	{"4294967296", NULL},
	{"1.2.3.4.5", NULL},
	{"256.1.1.1", NULL},
	{"1.2.3.08", NULL},
	{"1.2.3.0x", "1.2.3.0"},
	{"1.2.3.0xg", "1.2.3.0xg"},	/* not a number: a name */
	{"foo.123", NULL},
	{"foo.0x1", NULL},
	{"1.2.3.4..", NULL},
	{"a\xef\xbc\x8f" "b.com", NULL},	/* full-width solidus maps to '/' */
	{"a..b", NULL},
	{".a", NULL},
	{".", NULL},
	{"\xe3\x80\x82", NULL},
	{"[::1", NULL},
	{"[1.2.3.4]", NULL},
	{"\xff.com", NULL},
	{"a b", NULL},
};

static void
test_host_names(void)
{
	for (size_t i = 0; i < sizeof(host_cases) / sizeof(host_cases[0]); i++)
	{
		const char *in = host_cases[i][0];
		const char *want = host_cases[i][1];
		QcHostName	name;
		QcHostName	again;
		char		err[256] = "";
		bool		ok = qc_host_to_ascii(in, &name, err, sizeof(err));

		if (want == NULL)
		{
			check(!ok && err[0] != '\0', "refuse host", in);
			continue;
		}
		check(ok && strcmp(name.name, want) == 0, "host maps to", want);
		/* mapping what came out gives it again */
		check(ok && qc_host_to_ascii(name.name, &again, err, sizeof(err)) &&
			  strcmp(again.name, name.name) == 0 && again.is_ip == name.is_ip,
			  "host mapping is idempotent", want);
	}
}

static void
test_sockaddr(void)
{
	struct sockaddr_in in = {0};
	struct sockaddr_in6 in6 = {0};
	struct sockaddr_un un = {0};
	QcInetAddr	a;
	QcInetAddr	expect;
	char		text[64];
	int			port = 0;

	in.sin_family = AF_INET;
	in.sin_port = htons(8080);
	inet_pton(AF_INET, "10.1.2.3", &in.sin_addr);
	qc_inet_parse("10.1.2.3", &expect);
	check(qc_inet_from_sockaddr((struct sockaddr *) &in, &a, &port) &&
		  memcmp(&a, &expect, sizeof(a)) == 0 && port == 8080,
		  "IPv4 socket address", "10.1.2.3:8080");

	in6.sin6_family = AF_INET6;
	in6.sin6_port = htons(443);
	inet_pton(AF_INET6, "fd00::7", &in6.sin6_addr);
	qc_inet_parse("fd00::7", &expect);
	check(qc_inet_from_sockaddr((struct sockaddr *) &in6, &a, NULL) &&
		  memcmp(&a, &expect, sizeof(a)) == 0,
		  "IPv6 socket address, no port wanted", "[fd00::7]:443");
	qc_inet_format(&a, text, sizeof(text));
	check(strcmp(text, "fd00::7") == 0, "IPv6 socket address formats back", text);

	un.sun_family = AF_UNIX;
	check(!qc_inet_from_sockaddr((struct sockaddr *) &un, &a, &port),
		  "refuse a Unix socket address", "AF_UNIX");
}

int
main(void)
{
	test_classify();
	test_sockaddr();
	test_addr_lists();
	test_host_lists();
	test_host_names();
	printf("# %d cases, %d failed\n", ncase, nfail);
	return nfail != 0;
}
