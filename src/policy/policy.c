/*-------------------------------------------------------------------------
 *
 * policy.c
 *	  The rules every request obeys, applied to its URL before it is sent
 *	  and to every address it connects to.
 *
 * Every decision is made on the host as qc_url_parse() maps it (hostname.c:
 * IDNA, case, final dot, the IPv4 forms browsers accept), and the URL given
 * to libcurl holds that same host, so what is checked is what is reached.
 *
 * Two layers enforce queryclaw.block_local.  qc_policy_check_url() refuses a
 * literal address in the URL, and "localhost", before anything is sent (so
 * a refusal of 10.0.0.1 never produces a packet, with or without a proxy).  qc_policy_address_permitted() is the
 * connect-time check that http.c runs from libcurl's socket-open and
 * pre-request callbacks on the address actually used, which is what defeats
 * DNS names that resolve to private addresses, DNS rebinding, and redirects.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <ctype.h>
#include <curl/curl.h>
#include <sys/socket.h>

#include "utils/formatting.h"

#include "guc.h"
#include "policy.h"

/* Copy a libcurl string into palloc'd memory and free the original. */
static char *
take_curl_string(char *s)
{
	char	   *copy = s ? pstrdup(s) : NULL;

	curl_free(s);
	return copy;
}

/* The first control character (C0 or DEL) in text, or 0. */
static int
control_character(const char *text)
{
	for (const unsigned char *c = (const unsigned char *) text; *c; c++)
		if (*c < 0x20 || *c == 0x7f)
			return *c;
	return 0;
}

/*
 * Map the host libcurl found to the form policy and libcurl both use
 * (hostname.c), and put that form back into the URL.
 */
static bool
map_host(CURLU *handle, QcUrl *url, char **error)
{
	QcHostName	name;
	char		why[256];
	const char *written;

	if (!qc_host_to_ascii(url->host, &name, why, sizeof(why)))
	{
		*error = pstrdup(why);
		return false;
	}
	written = name.is_ip && name.addr.family == AF_INET6 ?
		psprintf("[%s]", name.name) : name.name;
	/* most hosts are written as they map: the URL is not parsed again */
	if (strcmp(written, url->host) != 0 &&
		curl_url_set(handle, CURLUPART_HOST, written, 0) != CURLUE_OK)
	{
		*error = psprintf("The host \"%s\" cannot be put back into the URL.", name.name);
		return false;
	}
	url->host = pstrdup(name.name);
	url->host_is_ip = name.is_ip;
	url->addr = name.addr;
	return true;
}

/* Read the parts of a URL libcurl has parsed; the host is mapped first. */
static bool
read_parts(CURLU *handle, QcUrl *url, char **error)
{
	char	   *part = NULL;

	if (curl_url_get(handle, CURLUPART_SCHEME, &part, 0) != CURLUE_OK)
	{
		*error = pstrdup("The URL has no scheme.");
		return false;
	}
	url->scheme = take_curl_string(part);
	url->scheme = asc_tolower(url->scheme, strlen(url->scheme));
	/* file:///x has no host: let the scheme rule refuse it, by name */
	url->host = curl_url_get(handle, CURLUPART_HOST, &part, 0) == CURLUE_OK ?
		take_curl_string(part) : pstrdup("");
	if (url->host[0] == '\0')
	{
		if (strcmp(url->scheme, "http") == 0 || strcmp(url->scheme, "https") == 0)
		{
			*error = pstrdup("The URL has no host.");
			return false;
		}
	}
	else if (!map_host(handle, url, error))
		return false;
	if (curl_url_get(handle, CURLUPART_PORT, &part, CURLU_DEFAULT_PORT) == CURLUE_OK)
		url->port = atoi(take_curl_string(part));
	if (curl_url_get(handle, CURLUPART_URL, &part, 0) != CURLUE_OK)
	{
		*error = pstrdup("The URL cannot be put together again.");
		return false;
	}
	url->url = take_curl_string(part);
	return true;
}

/*
 * The first printable ASCII character of the URL's host that no host name
 * has, or 0: libcurl 8 refuses such a host itself ("Bad hostname"), 7
 * leaves it to qc_host_to_ascii(), and both are worded as the latter does.
 */
static char
refused_host_char(const char *text)
{
	const char *host = strstr(text, "://");
	size_t		len;

	if (host == NULL)
		return 0;
	host += 3;
	len = strcspn(host, "/?#");
	for (const char *at = memchr(host, '@', len); at != NULL; at = memchr(host, '@', len))
	{
		len -= at + 1 - host;
		host = at + 1;
	}
	for (size_t i = 0; i < len && host[i] != ':'; i++)
	{
		unsigned char c = (unsigned char) host[i];

		if (c > 0x20 && c < 0x7f && !isalnum(c) && strchr("-._[]", c) == NULL)
			return (char) c;
	}
	return 0;
}

bool
qc_url_parse(const char *text, QcUrl *url, char **error)
{
	CURLU	   *handle;
	CURLUcode	rc;
	int			control = control_character(text);
	char		bad;
	bool		ok;

	memset(url, 0, sizeof(*url));
	/* CR, LF, ESC and kin: refused as they are, never cleaned up */
	if (control != 0)
	{
		*error = psprintf("The URL contains the control character 0x%02X.", control);
		return false;
	}
	if ((handle = curl_url()) == NULL)
		elog(ERROR, "out of memory creating a URL handle");
	rc = curl_url_set(handle, CURLUPART_URL, text, CURLU_NON_SUPPORT_SCHEME);
	if (rc == CURLUE_OK)
		rc = curl_url_set(handle, CURLUPART_FRAGMENT, NULL, 0);
	/*
	 * Refusals libcurl words differently by version, in words of our own:
	 * no scheme and a space (8 calls both malformed input, 7 a bad scheme
	 * and a bad host name), no host.
	 */
	if (rc == CURLUE_BAD_SCHEME || (rc != CURLUE_OK && strstr(text, "://") == NULL))
		*error = pstrdup("A URL must start with http:// or https://.");
	else if (rc != CURLUE_OK && strchr(text, ' ') != NULL)
		*error = pstrdup("A URL cannot contain white space.");
	else if (rc == CURLUE_NO_HOST)
		*error = pstrdup("The URL has no host.");
	else if (rc == CURLUE_BAD_HOSTNAME && (bad = refused_host_char(text)) != 0)
		*error = psprintf("The host contains \"%c\", which host names cannot contain.", bad);
	else if (rc != CURLUE_OK)
		*error = psprintf("%s.", curl_url_strerror(rc));
	ok = rc == CURLUE_OK && read_parts(handle, url, error);
	curl_url_cleanup(handle);
	return ok;
}

/* "localhost" and "*.localhost" (RFC 6761), as browsers and libcurl read them */
static bool
is_localhost(const char *host)
{
	size_t		len = strlen(host);

	return strcmp(host, "localhost") == 0 ||
		(len > 10 && strcmp(host + len - 10, ".localhost") == 0);
}

int
qc_url_literal_addresses(const QcUrl *url, QcInetAddr *addrs)
{
	if (url->host_is_ip)
	{
		addrs[0] = url->addr;
		return 1;
	}
	if (!is_localhost(url->host))
		return 0;
	qc_inet_parse("127.0.0.1", &addrs[0]);
	qc_inet_parse("::1", &addrs[1]);
	return 2;
}

/* A refusal by policy (42501): time does not lift it. */
/* A copy of a list setting's parsed form: flat, so one copy of its bytes. */
static const void *
copy_list(const void *list, int count, size_t header, size_t entry)
{
	size_t		size = header + count * entry;
	void	   *copy = palloc(size);

	memcpy(copy, list, size);
	return copy;
}

const QcPolicy *
qc_policy_capture(void)
{
	QcPolicy   *p = palloc(sizeof(QcPolicy));

	p->enabled = qc_enabled;
	p->block_local = qc_block_local;
	p->read_only = qc_read_only;
	p->max_redirects = qc_max_redirects;
	p->allowed_hosts = copy_list(qc_allowed_hosts_parsed, qc_allowed_hosts_parsed->count,
								 offsetof(QcHostList, rules), sizeof(QcHostRule));
	p->denied_hosts = copy_list(qc_denied_hosts_parsed, qc_denied_hosts_parsed->count,
								offsetof(QcHostList, rules), sizeof(QcHostRule));
	p->local_allowlist = copy_list(qc_local_allowlist_parsed, qc_local_allowlist_parsed->count,
								   offsetof(QcAddrList, rules), sizeof(QcAddrRule));
	p->user_agent = pstrdup(qc_user_agent);
	p->proxy = pstrdup(qc_proxy);
	p->ca_file = pstrdup(qc_ca_file);
	return p;
}

static void
refuse(QcVerdict *refusal, char *message, char *detail, char *hint)
{
	qc_verdict_refuse(refusal, ERRCODE_INSUFFICIENT_PRIVILEGE, message, detail, hint, 0);
}

/* Only http and https are spoken. */
static bool
check_scheme(const QcUrl *url, QcVerdict *refusal)
{
	if (strcmp(url->scheme, "http") == 0 || strcmp(url->scheme, "https") == 0)
		return true;
	refuse(refusal,
		   psprintf("URL scheme \"%s\" is not allowed", url->scheme),
		   pstrdup("Only http and https URLs can be requested."), NULL);
	return false;
}

/* queryclaw.denied_hosts, then queryclaw.allowed_hosts. */
static bool
check_hosts(const QcPolicy *policy, const QcUrl *url, QcVerdict *refusal)
{
	const QcHostRule *rule;

	if ((rule = qc_host_list_match(policy->denied_hosts, url->host, url->port)) != NULL)
	{
		refuse(refusal,
			   psprintf("host \"%s\" is denied by policy", url->host),
			   psprintf("The host matches the entry \"%s%s\" of queryclaw.denied_hosts.",
						rule->wildcard ? "*." : "", rule->name),
			   pstrdup("Remove the entry from queryclaw.denied_hosts to allow it."));
		return false;
	}
	if (policy->allowed_hosts->count > 0 &&
		qc_host_list_match(policy->allowed_hosts, url->host, url->port) == NULL)
	{
		refuse(refusal,
			   psprintf("host \"%s\" is not in the allowed hosts", url->host),
			   psprintf("queryclaw.allowed_hosts is set and no entry matches %s:%d.",
						url->host, url->port),
			   psprintf("Add \"%s\" to queryclaw.allowed_hosts to allow it.", url->host));
		return false;
	}
	return true;
}

/* queryclaw.block_local on the addresses the URL names without a lookup. */
static bool
check_literal_addresses(const QcPolicy *policy, const QcUrl *url, QcVerdict *refusal)
{
	QcAddrClass cls;
	QcInetAddr	addrs[2];
	int			naddrs = qc_url_literal_addresses(url, addrs);

	for (int i = 0; i < naddrs; i++)
	{
		if (!qc_policy_address_permitted(policy, &addrs[i], url->port, &cls))
		{
			qc_policy_address_refusal(&addrs[i], url->port, &cls, refusal);
			return false;
		}
	}
	return true;
}

/* queryclaw.read_only: GET and HEAD only. */
static bool
check_method(const QcPolicy *policy, const char *method, QcVerdict *refusal)
{
	if (!policy->read_only || strcmp(method, "GET") == 0 || strcmp(method, "HEAD") == 0)
		return true;
	refuse(refusal,
		   psprintf("method %s is not allowed", method),
		   pstrdup("queryclaw.read_only is on, so only GET and HEAD requests are allowed."),
		   pstrdup("A superuser can turn queryclaw.read_only off."));
	return false;
}

bool
qc_policy_check_trusted_url(const QcPolicy *policy, const QcUrl *url, QcVerdict *refusal)
{
	if (!policy->enabled)
	{
		refuse(refusal, pstrdup("queryclaw is disabled"),
			   pstrdup("Network requests are refused while queryclaw.enabled is off."),
			   pstrdup("A superuser can enable it with ALTER SYSTEM SET queryclaw.enabled = on and SELECT pg_reload_conf()."));
		refusal->sqlerrcode = ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE;
		return false;
	}
	return check_scheme(url, refusal);
}

bool
qc_policy_check_url(const QcPolicy *policy, const QcUrl *url, const char *method,
					QcVerdict *refusal)
{
	return qc_policy_check_trusted_url(policy, url, refusal) &&
		check_hosts(policy, url, refusal) &&
		check_literal_addresses(policy, url, refusal) &&
		check_method(policy, method, refusal);
}

bool
qc_policy_check_url_rules(const QcPolicy *policy, const QcUrl *url, const char *method,
						  QcVerdict *refusal)
{
	return check_scheme(url, refusal) && check_hosts(policy, url, refusal) &&
		check_method(policy, method, refusal);
}

bool
qc_policy_address_permitted(const QcPolicy *policy, const QcInetAddr *addr, int port,
							QcAddrClass *cls)
{
	if (qc_inet_classify(addr, cls) || !policy->block_local)
		return true;
	return qc_addr_list_match(policy->local_allowlist, addr, port) != NULL;
}

void
qc_policy_address_refusal(const QcInetAddr *addr, int port,
						  const QcAddrClass *cls, QcVerdict *refusal)
{
	char		text[64];
	char		inner[64];
	char	   *detail;

	qc_inet_format(addr, text, sizeof(text));
	if (cls->via != NULL)
	{
		qc_inet_format(&cls->embedded, inner, sizeof(inner));
		detail = psprintf("%s embeds %s (%s), which is not public (%s), and queryclaw.block_local is on.",
						  text, inner, cls->via, cls->range);
	}
	else
		detail = psprintf("%s is not public (%s) and queryclaw.block_local is on.",
						  text, cls->range);
	refuse(refusal,
		   psprintf("address %s is not public", text),
		   detail,
		   psprintf(addr->family == AF_INET6 ?
					"To allow it, add [%s]:%d (or the address alone) to queryclaw.local_allowlist." :
					"To allow it, add %s:%d (or the address alone) to queryclaw.local_allowlist.",
					text, port));
}
