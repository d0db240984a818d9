/*-------------------------------------------------------------------------
 *
 * fuzz_rules.c
 *	  Fuzz target: the list settings' syntax (src/common/rules.c):
 *	  queryclaw.local_allowlist and queryclaw.allowed_hosts/denied_hosts.
 *
 * The input is parsed as both kinds of list.  Properties checked besides
 * memory safety: a rejected list comes with a reason; every parsed entry
 * matches what it names (an address rule its own network address, a host
 * rule its own name or, for "*.name", a subdomain of it) and nothing on
 * another port when it names a port.
 *
 *-------------------------------------------------------------------------
 */
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "fuzz.h"
#include "rules.h"

static void
check_addr_list(const char *text)
{
	char		err[256] = "";
	QcAddrList *list = qc_addr_list_parse(text, err, sizeof(err));

	if (list == NULL)
	{
		FUZZ_CHECK(err[0] != '\0', "an address list refused without a reason");
		return;
	}
	for (int i = 0; i < list->count; i++)
	{
		const QcAddrRule *rule = &list->rules[i];
		int			port = rule->port ? rule->port : 443;

		FUZZ_CHECK(rule->net.family == AF_INET || rule->net.family == AF_INET6,
				   "an address rule without a family");
		FUZZ_CHECK(rule->bits >= 0 && rule->bits <= (rule->net.family == AF_INET ? 32 : 128),
				   "a prefix length out of range");
		FUZZ_CHECK(qc_addr_list_match(list, &rule->net, port) != NULL,
				   "an address rule does not match its own address");
	}
	/* a list whose every rule names a port lets no other port in */
	{
		bool		all_ported = list->count > 0;

		for (int i = 0; i < list->count; i++)
			all_ported = all_ported && list->rules[i].port != 0;
		for (int i = 0; all_ported && i < list->count; i++)
		{
			int			other = list->rules[i].port % 65535 + 1;
			bool		listed = false;

			for (int j = 0; j < list->count; j++)
				listed = listed || list->rules[j].port == other;
			if (!listed)
				FUZZ_CHECK(qc_addr_list_match(list, &list->rules[i].net, other) == NULL,
						   "an address rule matches a port it does not name");
		}
	}
	free(list);
}

static void
check_host_list(const char *text)
{
	char		err[256] = "";
	QcHostList *list = qc_host_list_parse(text, err, sizeof(err));

	if (list == NULL)
	{
		FUZZ_CHECK(err[0] != '\0', "a host list refused without a reason");
		return;
	}
	for (int i = 0; i < list->count; i++)
	{
		const QcHostRule *rule = &list->rules[i];
		char		host[QC_HOST_MAX + 8];
		int			port = rule->port ? rule->port : 80;

		FUZZ_CHECK(strlen(rule->name) > 0 && strlen(rule->name) <= QC_HOST_MAX,
				   "a host rule with an empty or overlong name");
		snprintf(host, sizeof(host), "%s%s", rule->wildcard ? "a." : "", rule->name);
		FUZZ_CHECK(qc_host_list_match(list, host, port) != NULL,
				   "a host rule does not match its own name");
		/* a stored name is its own mapping (hostname.c) */
		{
			QcHostName	again;
			char		why[256];

			FUZZ_CHECK(qc_host_to_ascii(rule->name, &again, why, sizeof(why)) &&
					   strcmp(again.name, rule->name) == 0,
					   "a stored name is not mapped");
		}
	}
	free(list);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char	   *text = malloc(size + 1);

	memcpy(text, data, size);
	text[size] = '\0';
	check_addr_list(text);
	check_host_list(text);
	free(text);
	return 0;
}
