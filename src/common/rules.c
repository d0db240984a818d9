/*-------------------------------------------------------------------------
 *
 * rules.c
 *	  Parse and match queryclaw.local_allowlist, queryclaw.allowed_hosts and
 *	  queryclaw.denied_hosts.
 *
 * Entries are separated by commas or white space.  Address entries are
 * "ADDR", "ADDR/BITS", "ADDR:PORT" or "ADDR/BITS:PORT"; IPv6 addresses take
 * a port only in brackets ("[::1]:8080").  Host entries are "name",
 * "*.name" or either with ":PORT".  Rate entries are "HOST=N/s" (or
 * N/min), HOST a host entry without a port or "*" for every other host.
 * Anything else is rejected with a reason,
 * so a typo in postgresql.conf fails loudly instead of silently allowing
 * or denying the wrong thing.
 *
 *-------------------------------------------------------------------------
 */
#include "rules.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#define ENTRY_MAX 300

/* Split callback: parse one entry into slot, or explain why not. */
typedef int (*entry_parser) (const char *entry, void *slot, char *err, size_t errlen);

/*
 * Walk the entries of a list, calling parse for each one.  Returns the
 * number parsed, or -1 with err set.  With slots == NULL only counts.
 */
static int
for_each_entry(const char *text, entry_parser parse, void *slots,
			   size_t slot_size, char *err, size_t errlen)
{
	int			n = 0;
	const char *p = text ? text : "";

	for (;;)
	{
		char		entry[ENTRY_MAX + 1];
		size_t		len = 0;

		while (*p == ',' || isspace((unsigned char) *p))
			p++;
		if (*p == '\0')
			return n;
		while (p[len] != '\0' && p[len] != ',' && !isspace((unsigned char) p[len]))
			len++;
		if (len > ENTRY_MAX)
		{
			snprintf(err, errlen, "List entry \"%.40s...\" is too long.", p);
			return -1;
		}
		memcpy(entry, p, len);
		entry[len] = '\0';
		p += len;
		if (slots != NULL &&
			!parse(entry, (char *) slots + n * slot_size, err, errlen))
			return -1;
		n++;
	}
}

/* Parse a decimal port 1..65535; returns 0 when invalid. */
static int
parse_port(const char *s)
{
	char	   *end;
	long		v;

	if (!isdigit((unsigned char) *s))
		return 0;
	errno = 0;
	v = strtol(s, &end, 10);
	if (errno != 0 || *end != '\0' || v < 1 || v > 65535)
		return 0;
	return (int) v;
}

/*
 * Split "host[:port]" or "[v6][:port]" (with an optional "/bits" before the
 * port for addresses) in place.  Sets *port (0 if none); returns the host
 * part or NULL when a port is present but bad.
 */
static char *
split_port(char *entry, int *port)
{
	char	   *colon;

	*port = 0;
	if (entry[0] == '[')
	{
		char	   *close = strchr(entry, ']');

		if (close == NULL)
			return NULL;
		*close = '\0';
		if (close[1] == '/')
		{
			/* "[v6]/bits[:port]": move the prefix next to the address */
			char	   *pc = strchr(close + 1, ':');

			if (pc != NULL)
			{
				*pc = '\0';
				if ((*port = parse_port(pc + 1)) == 0)
					return NULL;
			}
			memmove(close, close + 1, strlen(close + 1) + 1);
		}
		else if (close[1] == ':')
		{
			if ((*port = parse_port(close + 2)) == 0)
				return NULL;
		}
		else if (close[1] != '\0')
			return NULL;
		return entry + 1;
	}
	colon = strchr(entry, ':');
	/* more than one colon and no brackets: a bare IPv6 address, no port */
	if (colon != NULL && strchr(colon + 1, ':') == NULL)
	{
		*colon = '\0';
		if ((*port = parse_port(colon + 1)) == 0)
			return NULL;
	}
	return entry;
}

static int
parse_addr_entry(const char *entry, void *slot, char *err, size_t errlen)
{
	QcAddrRule *rule = slot;
	char		buf[ENTRY_MAX + 1];
	char	   *host;
	char	   *slash;
	int			maxbits;

	strcpy(buf, entry);
	host = split_port(buf, &rule->port);
	if (host == NULL)
	{
		snprintf(err, errlen, "Entry \"%s\" has an invalid port.", entry);
		return 0;
	}
	slash = strchr(host, '/');
	if (slash != NULL)
		*slash = '\0';
	if (!qc_inet_parse(host, &rule->net))
	{
		snprintf(err, errlen,
				 "Entry \"%s\" is not an IP address or CIDR (host names are not allowed here).",
				 entry);
		return 0;
	}
	maxbits = rule->net.family == AF_INET ? 32 : 128;
	rule->bits = maxbits;
	if (slash != NULL)
	{
		char	   *end;
		long		bits;

		errno = 0;
		bits = strtol(slash + 1, &end, 10);
		if (errno != 0 || end == slash + 1 || *end != '\0' || bits < 0 || bits > maxbits)
		{
			snprintf(err, errlen, "Entry \"%s\" has an invalid prefix length.", entry);
			return 0;
		}
		rule->bits = (int) bits;
	}
	return 1;
}

static int
parse_host_entry(const char *entry, void *slot, char *err, size_t errlen)
{
	QcHostRule *rule = slot;
	char		buf[ENTRY_MAX + 1];
	char	   *host;
	QcHostName	name;
	char		why[200];

	strcpy(buf, entry);
	host = split_port(buf, &rule->port);
	if (host == NULL)
	{
		snprintf(err, errlen, "Entry \"%s\" has an invalid port.", entry);
		return 0;
	}
	rule->wildcard = (strncmp(host, "*.", 2) == 0);
	if (rule->wildcard)
		host += 2;
	/* entries are matched in the form URLs are mapped to */
	if (!qc_host_to_ascii(host, &name, why, sizeof(why)))
	{
		snprintf(err, errlen, "Entry \"%s\" is not a host name, \"*.\" followed by a host name, or an IP address. %s",
				 entry, why);
		return 0;
	}
	if (rule->wildcard && name.is_ip)
	{
		snprintf(err, errlen, "Entry \"%s\" puts \"*.\" before an IP address.", entry);
		return 0;
	}
	strcpy(rule->name, name.name);
	return 1;
}

/* Most requests a second one rate entry may allow. */
#define RATE_MAX 1000000.0

/* "N/s" or "N/min", N a positive decimal number: requests a second, or 0. */
static double
parse_rate(const char *s)
{
	char	   *end;
	double		n;

	if (!isdigit((unsigned char) *s))
		return 0;
	errno = 0;
	n = strtod(s, &end);
	if (errno != 0 || n <= 0 || n > RATE_MAX)
		return 0;
	if (strcmp(end, "/s") == 0)
		return n;
	if (strcmp(end, "/min") == 0)
		return n / 60.0;
	return 0;
}

static int
parse_rate_entry(const char *entry, void *slot, char *err, size_t errlen)
{
	QcRateRule *rule = slot;
	char		host[ENTRY_MAX + 1];
	const char *eq = strrchr(entry, '=');

	if (eq == NULL || (rule->per_second = parse_rate(eq + 1)) == 0)
	{
		snprintf(err, errlen, "Entry \"%s\" is not HOST=N/s (or HOST=N/min), N a number above 0 and at most %.0f a second.",
				 entry, RATE_MAX);
		return 0;
	}
	memcpy(host, entry, eq - entry);
	host[eq - entry] = '\0';
	if (strcmp(host, "*") == 0)
	{
		memset(&rule->host, 0, sizeof(rule->host));
		rule->host.wildcard = 1;
		return 1;
	}
	if (!parse_host_entry(host, &rule->host, err, errlen))
		return 0;
	if (rule->host.port != 0)
	{
		snprintf(err, errlen, "Entry \"%s\" names a port: a rate applies to a host, whatever the port.",
				 entry);
		return 0;
	}
	return 1;
}

/* Count, allocate, then parse: shared by every list kind. */
static void *
parse_list(const char *text, entry_parser parse, size_t header, size_t slot_size,
		   char *err, size_t errlen)
{
	int			n = for_each_entry(text, parse, NULL, slot_size, err, errlen);
	char	   *list;

	if (n < 0)
		return NULL;
	list = calloc(1, header + (size_t) n * slot_size);
	if (list == NULL)
	{
		snprintf(err, errlen, "Out of memory.");
		return NULL;
	}
	if (for_each_entry(text, parse, list + header, slot_size, err, errlen) < 0)
	{
		free(list);
		return NULL;
	}
	*(int *) list = n;
	return list;
}

QcAddrList *
qc_addr_list_parse(const char *text, char *err, size_t errlen)
{
	return parse_list(text, parse_addr_entry, offsetof(QcAddrList, rules),
					  sizeof(QcAddrRule), err, errlen);
}

QcHostList *
qc_host_list_parse(const char *text, char *err, size_t errlen)
{
	return parse_list(text, parse_host_entry, offsetof(QcHostList, rules),
					  sizeof(QcHostRule), err, errlen);
}

QcRateList *
qc_rate_list_parse(const char *text, char *err, size_t errlen)
{
	return parse_list(text, parse_rate_entry, offsetof(QcRateList, rules),
					  sizeof(QcRateRule), err, errlen);
}

const QcAddrRule *
qc_addr_list_match(const QcAddrList *list, const QcInetAddr *addr, int port)
{
	for (int i = 0; list != NULL && i < list->count; i++)
	{
		const QcAddrRule *rule = &list->rules[i];

		if ((rule->port == 0 || rule->port == port) &&
			qc_inet_in_prefix(addr, &rule->net, rule->bits))
			return rule;
	}
	return NULL;
}

/* "*.example.com" covers "a.example.com" and "a.b.example.com" */
static bool
subdomain_of(const char *host, size_t hostlen, const char *domain)
{
	size_t		len = strlen(domain);

	return hostlen > len + 1 && host[hostlen - len - 1] == '.' &&
		strcmp(host + hostlen - len, domain) == 0;
}

const QcHostRule *
qc_host_list_match(const QcHostList *list, const char *host, int port)
{
	size_t		hostlen = strlen(host);

	for (int i = 0; list != NULL && i < list->count; i++)
	{
		const QcHostRule *rule = &list->rules[i];

		if (rule->port != 0 && rule->port != port)
			continue;
		if (!rule->wildcard && strcmp(host, rule->name) == 0)
			return rule;
		if (rule->wildcard && subdomain_of(host, hostlen, rule->name))
			return rule;
	}
	return NULL;
}

const QcRateRule *
qc_rate_list_match(const QcRateList *list, const char *host)
{
	const QcRateRule *best = NULL;
	size_t		hostlen = strlen(host);

	for (int i = 0; list != NULL && i < list->count; i++)
	{
		const QcRateRule *rule = &list->rules[i];

		if (!rule->host.wildcard && strcmp(rule->host.name, host) == 0)
			return rule;		/* the host's own entry wins */
		/* "*" (an empty name) covers every host, the longest domain wins */
		if (rule->host.wildcard &&
			(rule->host.name[0] == '\0' || subdomain_of(host, hostlen, rule->host.name)) &&
			(best == NULL || strlen(rule->host.name) > strlen(best->host.name)))
			best = rule;
	}
	return best;
}
