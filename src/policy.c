/*-------------------------------------------------------------------------
 *
 * policy.c
 *	  The rules every request obeys, applied to its URL before it is sent
 *	  and to every address it connects to.
 *
 * Two layers enforce queryclaw.block_local.  qc_policy_check_url() refuses a
 * literal address in the URL before anything is sent (so a refusal of
 * 10.0.0.1 never produces a packet).  qc_policy_address_permitted() is the
 * connect-time check that http.c runs from libcurl's socket-open and
 * pre-request callbacks on the address actually used, which is what defeats
 * DNS names that resolve to private addresses, DNS rebinding, and redirects.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <curl/curl.h>
#include <sys/socket.h>

#include "utils/formatting.h"

#include "queryclaw.h"

/* Copy a libcurl string into palloc'd memory and free the original. */
static char *
take_curl_string(char *s)
{
	char	   *copy = s ? pstrdup(s) : NULL;

	curl_free(s);
	return copy;
}

bool
qc_url_parse(const char *text, QcUrl *url, char **error)
{
	CURLU	   *handle = curl_url();
	CURLUcode	rc;
	unsigned int flags = CURLU_NON_SUPPORT_SCHEME;
	char	   *part = NULL;

	memset(url, 0, sizeof(*url));
	if (handle == NULL)
		elog(ERROR, "out of memory creating a URL handle");

	rc = curl_url_set(handle, CURLUPART_URL, text, flags);
	if (rc == CURLUE_OK)
		rc = curl_url_set(handle, CURLUPART_FRAGMENT, NULL, 0);
	if (rc == CURLUE_OK && curl_url_get(handle, CURLUPART_URL, &part, 0) == CURLUE_OK)
		url->url = take_curl_string(part);
	if (rc == CURLUE_OK && curl_url_get(handle, CURLUPART_SCHEME, &part, 0) == CURLUE_OK)
		url->scheme = take_curl_string(part);
	if (rc == CURLUE_OK && curl_url_get(handle, CURLUPART_HOST, &part, 0) == CURLUE_OK)
		url->host = take_curl_string(part);
	if (rc == CURLUE_OK && curl_url_get(handle, CURLUPART_PORT, &part, CURLU_DEFAULT_PORT) == CURLUE_OK)
		url->port = atoi(take_curl_string(part));
	curl_url_cleanup(handle);

	/*
	 * Refusals libcurl words differently by version, in words of our own:
	 * no scheme and white space (8 calls both malformed input, 7 a bad
	 * scheme and a bad host name), no host.
	 */
	if (rc == CURLUE_BAD_SCHEME || (rc != CURLUE_OK && strstr(text, "://") == NULL))
	{
		*error = pstrdup("A URL must start with http:// or https://.");
		return false;
	}
	if (rc != CURLUE_OK && strpbrk(text, " \t\r\n") != NULL)
	{
		*error = pstrdup("A URL cannot contain white space.");
		return false;
	}
	if (rc == CURLUE_NO_HOST)
	{
		*error = pstrdup("The URL has no host.");
		return false;
	}
	if (rc != CURLUE_OK)
	{
		*error = psprintf("%s.", curl_url_strerror(rc));
		return false;
	}
	url->scheme = asc_tolower(url->scheme, strlen(url->scheme));
	/* file:///x has no host: let the scheme rule refuse it, by name */
	if (url->host == NULL)
		url->host = pstrdup("");
	if (url->host[0] == '\0' &&
		(strcmp(url->scheme, "http") == 0 || strcmp(url->scheme, "https") == 0))
	{
		*error = pstrdup("The URL has no host.");
		return false;
	}
	qc_host_normalise(url->host);
	url->host_is_ip = qc_inet_parse(url->host, &url->addr);
	return true;
}

static void
refuse(QcRefusal *refusal, char *message, char *detail, char *hint)
{
	refusal->sqlerrcode = ERRCODE_INSUFFICIENT_PRIVILEGE;
	refusal->message = message;
	refusal->detail = detail;
	refusal->hint = hint;
}

bool
qc_policy_check_trusted_url(const QcUrl *url, QcRefusal *refusal)
{
	if (!qc_enabled)
	{
		refuse(refusal, pstrdup("queryclaw is disabled"),
			   pstrdup("Network requests are refused while queryclaw.enabled is off."),
			   pstrdup("A superuser can enable it with ALTER SYSTEM SET queryclaw.enabled = on and SELECT pg_reload_conf()."));
		refusal->sqlerrcode = ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE;
		return false;
	}
	if (strcmp(url->scheme, "http") != 0 && strcmp(url->scheme, "https") != 0)
	{
		refuse(refusal,
			   psprintf("URL scheme \"%s\" is not allowed", url->scheme),
			   pstrdup("Only http and https URLs can be requested."), NULL);
		return false;
	}
	return true;
}

bool
qc_policy_check_url(const QcUrl *url, const char *method, QcRefusal *refusal)
{
	const QcHostRule *rule;
	QcAddrClass cls;

	if (!qc_policy_check_trusted_url(url, refusal))
		return false;
	if ((rule = qc_host_list_match(qc_denied_hosts_parsed, url->host, url->port)) != NULL)
	{
		refuse(refusal,
			   psprintf("host \"%s\" is denied by policy", url->host),
			   psprintf("The host matches the entry \"%s%s\" of queryclaw.denied_hosts.",
						rule->wildcard ? "*." : "", rule->name),
			   pstrdup("Remove the entry from queryclaw.denied_hosts to allow it."));
		return false;
	}
	if (qc_allowed_hosts_parsed->count > 0 &&
		qc_host_list_match(qc_allowed_hosts_parsed, url->host, url->port) == NULL)
	{
		refuse(refusal,
			   psprintf("host \"%s\" is not in the allowed hosts", url->host),
			   psprintf("queryclaw.allowed_hosts is set and no entry matches %s:%d.",
						url->host, url->port),
			   psprintf("Add \"%s\" to queryclaw.allowed_hosts to allow it.", url->host));
		return false;
	}
	if (url->host_is_ip &&
		!qc_policy_address_permitted(&url->addr, url->port, &cls))
	{
		qc_policy_address_refusal(&url->addr, url->port, &cls, refusal);
		return false;
	}
	if (qc_read_only && strcmp(method, "GET") != 0 && strcmp(method, "HEAD") != 0)
	{
		refuse(refusal,
			   psprintf("method %s is not allowed", method),
			   pstrdup("queryclaw.read_only is on, so only GET and HEAD requests are allowed."),
			   pstrdup("A superuser can turn queryclaw.read_only off."));
		return false;
	}
	return true;
}

bool
qc_policy_address_permitted(const QcInetAddr *addr, int port, QcAddrClass *cls)
{
	if (qc_inet_classify(addr, cls) || !qc_block_local)
		return true;
	return qc_addr_list_match(qc_local_allowlist_parsed, addr, port) != NULL;
}

void
qc_policy_address_refusal(const QcInetAddr *addr, int port,
						  const QcAddrClass *cls, QcRefusal *refusal)
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
