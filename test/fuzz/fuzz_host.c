/*-------------------------------------------------------------------------
 *
 * fuzz_host.c
 *	  Fuzz target: the host mapper (src/common/hostname.c), and the host lists
 *	  that are matched against what it makes (src/common/rules.c).
 *
 * The input is a host as a URL spells it.  Properties checked besides
 * memory safety and leaks (libidn2's allocations included):
 * - a refused host comes with a reason;
 * - what comes out is ASCII a URL can hold: letters, digits, '-', '.' and
 *   '_' for a name (no empty label, no final dot), an address's canonical
 *   text for an IP, at most QC_HOST_MAX bytes;
 * - mapping is idempotent: what comes out maps to itself, with the same
 *   address;
 * - a name that ends in a number is always an address;
 * - a host list entry written as the input is accepted exactly when the
 *   host is, and holds the very name the host maps to, so that a list
 *   matches every spelling of its entries.
 *
 *-------------------------------------------------------------------------
 */
#include <arpa/inet.h>
#include <ctype.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "fuzz.h"
#include "hostname.h"
#include "rules.h"

static void
check_output(const QcHostName *name)
{
	size_t		len = strlen(name->name);
	const char *allowed = name->is_ip ?
		(name->addr.family == AF_INET6 ? "0123456789abcdef:." : "0123456789.") :
		"abcdefghijklmnopqrstuvwxyz0123456789-._";
	char		text[64];

	FUZZ_CHECK(len > 0 && len <= QC_HOST_MAX, "an empty or overlong host");
	FUZZ_CHECK(strspn(name->name, allowed) == len, "a character a host cannot hold");
	if (name->is_ip)
	{
		qc_inet_format(&name->addr, text, sizeof(text));
		FUZZ_CHECK(strcmp(text, name->name) == 0, "an address not in its canonical text");
		return;
	}
	FUZZ_CHECK(name->name[0] != '.' && name->name[len - 1] != '.' &&
			   strstr(name->name, "..") == NULL, "a name with an empty label");
	/* the last label is never all digits: such a name is an address */
	{
		const char *dot = strrchr(name->name, '.');
		const char *last = dot ? dot + 1 : name->name;

		FUZZ_CHECK(strspn(last, "0123456789") != strlen(last),
				   "a name ending in a number that is not an address");
	}
}

static void
check_idempotent(const QcHostName *name)
{
	QcHostName	again;
	char		err[256] = "";

	FUZZ_CHECK(qc_host_to_ascii(name->name, &again, err, sizeof(err)),
			   "a mapped host does not map again");
	FUZZ_CHECK(strcmp(again.name, name->name) == 0 && again.is_ip == name->is_ip &&
			   (!name->is_ip || memcmp(&again.addr, &name->addr, sizeof(again.addr)) == 0),
			   "mapping a mapped host changed it");
}

/* An entry written as the host: the same verdict, the same name. */
static void
check_list_entry(const char *host, bool ok, const QcHostName *name)
{
	char		err[256] = "";
	QcHostList *list;

	/* what the list syntax reads otherwise: separators, ports, wildcards */
	for (const char *c = host; *c; c++)
		if (*c == ',' || *c == ':' || *c == '[' || isspace((unsigned char) *c))
			return;
	if (strncmp(host, "*.", 2) == 0 || *host == '\0' || strlen(host) > 300)
		return;
	list = qc_host_list_parse(host, err, sizeof(err));
	FUZZ_CHECK((list != NULL) == ok, "a list entry and a URL host judged differently");
	if (list != NULL)
	{
		FUZZ_CHECK(list->count == 1 && strcmp(list->rules[0].name, name->name) == 0,
				   "a list entry holds another name than the host maps to");
		FUZZ_CHECK(qc_host_list_match(list, name->name, 80) != NULL,
				   "a list entry does not match its own host");
	}
	else
		FUZZ_CHECK(err[0] != '\0', "a list refused without a reason");
	free(list);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char	   *host = malloc(size + 1);
	QcHostName	name;
	char		err[256] = "";
	bool		ok;

	memcpy(host, data, size);
	host[size] = '\0';
	ok = qc_host_to_ascii(host, &name, err, sizeof(err));
	if (ok)
	{
		check_output(&name);
		check_idempotent(&name);
	}
	else
		FUZZ_CHECK(err[0] != '\0', "a host refused without a reason");
	check_list_entry(host, ok, &name);
	free(host);
	return 0;
}
