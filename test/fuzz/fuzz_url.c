/*-------------------------------------------------------------------------
 *
 * fuzz_url.c
 *	  Fuzz target: URL parsing and the policy decided from a URL
 *	  (src/policy/policy.c), and redaction (src/common/redact.c).
 *
 * Input: one flags byte, then optionally a list setting and a newline,
 * then the URL.  The flags choose which list the first line sets
 * (queryclaw.local_allowlist, allowed_hosts or denied_hosts), block_local,
 * read_only and the method.  Properties checked besides memory safety and
 * the absence of any ERROR:
 * - the policy is the one qc_policy_capture() copies from the settings;
 * - a refusal has a message and a detail, names its SQLSTATE, and is not
 *   one that waiting lifts; an allowed URL leaves the verdict alone;
 * - an allowed URL is http or https, a literal address in it is public or
 *   in the allowlist, and the rules a queued request is checked for
 *   (qc_policy_check_url_rules) allow it too;
 * - the URL handed to libcurl holds the very host the policy decided on
 *   (hostname.c's mapping), as libcurl's own parser reads it back;
 * - what qc_redact_url() makes of a URL, as given or as normalised, keeps
 *   no fragment, no value of a query parameter named like a secret, and,
 *   if libcurl takes it for a URL, no password libcurl would find in it;
 * - no configured API key survives qc_redact_keys();
 * - qc_redact_statement() leaves no configured API key either, and what it
 *   makes of its own output is that output (nothing left to redact).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <curl/curl.h>
#include <sys/socket.h>

#include "guc.h"
#include "policy.h"
#include "redact.h"
#include "shim.h"

/* The settings policy.c reads (guc.c is not linked) */
bool		qc_enabled = true;
bool		qc_block_local = true;
bool		qc_read_only = false;
int			qc_max_redirects = 5;
char	   *qc_user_agent = "queryclaw_ext/fuzz";
char	   *qc_proxy = "";
char	   *qc_ca_file = "";
char	   *qc_llm_api_key = "sk-fuzz-0123456789";
char	   *qc_search_api_key = "search-key-fuzz";
char	   *qc_embed_api_key = "embed-key-fuzz";
static const QcAddrList empty_addr_list = {0};
static const QcHostList empty_host_list = {0};
const QcAddrList *qc_local_allowlist_parsed = &empty_addr_list;
const QcHostList *qc_allowed_hosts_parsed = &empty_host_list;
const QcHostList *qc_denied_hosts_parsed = &empty_host_list;

static const char *const methods[] = {"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE"};

/* Set the list the flags choose from text; false if it does not parse. */
static bool
set_list(int which, const char *text, void **list)
{
	char		err[256];

	if (which == 0)
		qc_local_allowlist_parsed = *list = qc_addr_list_parse(text, err, sizeof(err));
	else if (which == 1)
		qc_allowed_hosts_parsed = *list = qc_host_list_parse(text, err, sizeof(err));
	else
		qc_denied_hosts_parsed = *list = qc_host_list_parse(text, err, sizeof(err));
	return *list != NULL;
}

static void
reset_lists(void)
{
	qc_local_allowlist_parsed = &empty_addr_list;
	qc_allowed_hosts_parsed = &empty_host_list;
	qc_denied_hosts_parsed = &empty_host_list;
}

/* The password libcurl finds in a URL, or NULL. */
static char *
curl_password(const char *text)
{
	CURLU	   *h = curl_url();
	char	   *part = NULL;
	char	   *copy = NULL;

	if (curl_url_set(h, CURLUPART_URL, text, CURLU_NON_SUPPORT_SCHEME) == CURLUE_OK &&
		curl_url_get(h, CURLUPART_PASSWORD, &part, 0) == CURLUE_OK)
	{
		copy = pstrdup(part);
		curl_free(part);
	}
	curl_url_cleanup(h);
	return copy;
}

/*
 * Check what qc_redact_url() makes of text.  Text libcurl does not take for
 * a URL sends no password, so only a URL's must not survive.
 */
static void
check_redaction(const char *text)
{
	char	   *shown = qc_redact_url(text);
	const char *query;

	FUZZ_CHECK(strchr(shown, '#') == NULL, "a fragment survived redaction");
	if (curl_password(text) != NULL)
	{
		char	   *password = curl_password(shown);

		FUZZ_CHECK(password == NULL || password[0] == '\0',
				   "libcurl still finds a password in the redacted URL");
	}

	/* every secret-named parameter's value is REDACTED ('&' or ';' between) */
	query = strchr(shown, '?');
	for (const char *p = query ? query + 1 : NULL; p != NULL && *p != '\0';)
	{
		size_t		len = strcspn(p, "&;");
		const char *eq = memchr(p, '=', len);

		if (eq != NULL)
		{
			char	   *name = pnstrdup(p, eq - p);

			if (qc_name_is_secret(name, false))
				FUZZ_CHECK(len - (eq + 1 - p) == 8 && strncmp(eq + 1, "REDACTED", 8) == 0,
						   "a secret parameter survived redaction");
		}
		p += len;
		if (*p == '&' || *p == ';')
			p++;
	}
}

/* The configured API keys never survive qc_redact_keys(). */
static void
check_keys(const char *text)
{
	const char *shown = qc_redact_keys(text);

	FUZZ_CHECK(strstr(shown, qc_llm_api_key) == NULL &&
			   strstr(shown, qc_search_api_key) == NULL,
			   "an API key survived qc_redact_keys");
}

/*
 * The policy as a call captures it from the settings the flags chose.  The
 * literal address is checked against the setting itself, not the captured
 * copy, so a copy that lost or changed an entry is caught.
 */
static void
check_policy(const QcUrl *url, const char *method)
{
	const QcPolicy *policy = qc_policy_capture();
	QcVerdict	refusal = {0};
	QcVerdict	rules = {0};
	QcAddrClass cls;

	FUZZ_CHECK(policy->enabled == qc_enabled && policy->block_local == qc_block_local &&
			   policy->read_only == qc_read_only,
			   "the captured policy differs from the settings");
	if (!qc_policy_check_url(policy, url, method, &refusal))
	{
		FUZZ_CHECK(!refusal.allowed && refusal.message != NULL && refusal.detail != NULL,
				   "a refusal without a message or detail");
		FUZZ_CHECK(refusal.sqlerrcode != 0, "a refusal without a SQLSTATE");
		FUZZ_CHECK(refusal.retry_at == 0, "a policy refusal that waiting would lift");
		return;
	}
	FUZZ_CHECK(refusal.message == NULL && refusal.sqlerrcode == 0,
			   "an allowed URL's verdict was filled in");
	FUZZ_CHECK(qc_policy_check_url_rules(policy, url, method, &rules),
			   "a URL the policy allows is refused when queued");
	FUZZ_CHECK(strcmp(url->scheme, "http") == 0 || strcmp(url->scheme, "https") == 0,
			   "a scheme other than http or https allowed");
	FUZZ_CHECK(url->port >= 0 && url->port <= 65535, "a port out of range allowed");
	if (url->host_is_ip && qc_block_local && !qc_inet_classify(&url->addr, &cls))
		FUZZ_CHECK(qc_addr_list_match(qc_local_allowlist_parsed, &url->addr, url->port) != NULL,
				   "a non-public address allowed");
}

/* libcurl, given url->url, finds the host the policy decided on. */
static void
check_same_host(const QcUrl *url)
{
	CURLU	   *h;
	char	   *part = NULL;
	const char *expected;

	if (url->host[0] == '\0')
		return;
	expected = url->host_is_ip && url->addr.family == AF_INET6 ?
		psprintf("[%s]", url->host) : url->host;
	h = curl_url();
	FUZZ_CHECK(curl_url_set(h, CURLUPART_URL, url->url, CURLU_NON_SUPPORT_SCHEME) == CURLUE_OK,
			   "libcurl cannot parse the URL it is given");
	FUZZ_CHECK(curl_url_get(h, CURLUPART_HOST, &part, 0) == CURLUE_OK &&
			   strcmp(part, expected) == 0,
			   "libcurl finds another host than the policy decided on");
	curl_free(part);
	curl_url_cleanup(h);
}

/* The statement text as stored: no key left, and nothing more to hide. */
static void
check_statement(const char *text)
{
	char	   *shown = qc_redact_statement(text);

	FUZZ_CHECK(strstr(shown, qc_llm_api_key) == NULL &&
			   strstr(shown, qc_search_api_key) == NULL,
			   "an API key survived statement redaction");
	FUZZ_CHECK(strcmp(qc_redact_statement(shown), shown) == 0,
			   "redacting a redacted statement changed it");
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char	   *text;
	char	   *newline;
	void	   *list = NULL;
	int			flags;
	QcUrl		url;
	char	   *error = NULL;

	if (size < 1)
		return 0;
	flags = data[0];
	text = qc_fuzz_cstring(data + 1, size - 1);
	qc_block_local = (flags & 1) == 0;
	qc_read_only = (flags & 2) != 0;
	newline = strchr(text, '\n');
	if (newline != NULL)
	{
		*newline = '\0';
		if (!set_list((flags >> 2) % 3, text, &list))
			goto done;
		text = newline + 1;
	}

	check_redaction(text);
	check_keys(text);
	check_statement(text);
	if (qc_url_parse(text, &url, &error))
	{
		FUZZ_CHECK(url.url != NULL && url.scheme != NULL && url.host != NULL,
				   "a parsed URL lacks a part");
		check_redaction(url.url);
		check_same_host(&url);
		check_policy(&url, methods[(flags >> 4) % lengthof(methods)]);
	}
	else
		FUZZ_CHECK(error != NULL && error[0] != '\0', "an invalid URL without a reason");

done:
	free(list);
	reset_lists();
	qc_fuzz_reset();
	return 0;
}
