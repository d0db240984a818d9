/*-------------------------------------------------------------------------
 *
 * redact.h
 *	  Keeping secrets out of the audit log, error messages and redirects.
 *
 *-------------------------------------------------------------------------
 */
#ifndef QC_REDACT_H
#define QC_REDACT_H

#include "nodes/pg_list.h"

/*
 * Is this a header (or query parameter) name whose value is a secret?
 * Headers: the name holds a telling word ("X-Api-Key", "Cookie",
 * "Session-Id"), or is a known vendor one.  Parameters: its last word ends
 * with one ("api_key", "accessToken", "jsessionid", "session_id"; not
 * "keyword", "token_count").
 * %XX escapes in the name are decoded first.
 */
extern bool qc_name_is_secret(const char *name, bool is_header);

/* A copy of s[0..len) with %XX escapes decoded (a %00 is dropped). */
extern char *qc_percent_decode(const char *s, size_t len);

/*
 * A copy of url fit to show or store: userinfo and fragment removed; the
 * values of query and ";" parameters with secret-looking names (their
 * %XX escapes decoded) or token-looking values, and path segments that
 * look like tokens (a run of 20 or more letters and digits mixing both, or
 * a well-known token prefix), replaced by REDACTED; control characters
 * written as %XX.  Works on any text, including URLs that do not parse.
 */
extern char *qc_redact_url(const char *url);

/*
 * text with every occurrence of the configured API keys
 * (queryclaw.llm_api_key, queryclaw.search_api_key, queryclaw.embed_api_key
 * and the values remembered from user mappings; 8 characters or more)
 * replaced by REDACTED, in a palloc'd copy (text itself when no key
 * occurs): for what an endpoint sends back, and for statement text stored
 * in audit rows.
 */
extern const char *qc_redact_keys(const char *text);

/*
 * From now on, hide secret (a value a user mapping sends: servers.h)
 * wherever this backend stores or shows text: as qc_redact_keys() hides
 * the configured keys, in every URL qc_redact_url() shows, and among every
 * call's secrets (qc_call_secrets), whichever role's call it is.  Values
 * shorter than 8 characters are not remembered; the last 256 are.
 */
extern void qc_redact_remember(const char *secret);

/*
 * Free text fit to store or show (statement text, error messages, what a
 * server said): JSON escapes of ASCII characters decoded, then the
 * configured API keys, every http(s) URL as qc_redact_url() does, the value
 * after a secret-looking name (quoted: '"token": …', "'X-Api-Key', …";
 * or bare: "password=…", "Authorization: …"; JSON values at any depth,
 * arrays and objects whole), "Bearer …", and well-known token shapes
 * ("sk-…", "ghp_…", "xoxb-…", "bot123…:…") replaced by REDACTED.  Linear
 * in the text's length; idempotent; errs on the side of hiding.
 */
extern char *qc_redact_text(const char *text);

/*
 * The secrets a call sends, for qc_redact_secrets(): every value its URL
 * and final URL hold that qc_redact_url() hides (userinfo also as the
 * base64 of a Basic Authorization header), and the values of its headers
 * with secret-looking names, whole and word by word (but for an
 * Idempotency-Key, which names the request and is stored as it is); each
 * as written and %XX-decoded, 6 characters or more.  headers is a List of
 * QcHeader.  NIL when it sends none.
 */
extern List *qc_call_secrets(const char *url, const char *final_url,
							 List *headers);

/*
 * The secrets a user mapping sends (headers: a List of QcHeader; query:
 * its parameters, or NULL) in every form a server may echo them
 * (redactforms.c): each header value whole, its words and the values of
 * its "name=value" words, Basic credentials decoded; each query value as
 * written and decoded ("+" as a space or not); each of these also
 * percent-encoded as libraries write it and JSON-escaped.  Forms shorter
 * than 8 characters are left out.  Each once, the longest first, for
 * qc_redact_secrets().
 */
extern List *qc_mapping_secrets(List *headers, const char *query);

/*
 * text with every occurrence of secrets (from qc_call_secrets) replaced by
 * REDACTED, wherever it is, JSON escapes and HTML numeric character
 * references of ASCII characters decoded (but for quotes, backslashes and
 * markup): a server may echo a secret without its name, escaped or not.  So is the
 * start of one that ends text (6 characters or more): what was cut at a
 * limit.  text itself, not decoded, when none occurs.
 */
extern const char *qc_redact_secrets(const char *text, List *secrets);

/*
 * A header's value fit to store or show: REDACTED when its name looks
 * secret (qc_name_is_secret), else as qc_redact_text() makes it.
 */
extern const char *qc_redact_header(const char *name, const char *value);

/*
 * qc_redact_text() of what a server said about a call (an error quoting
 * the response), cleared of the call's secrets first (qc_redact_secrets).
 */
extern char *qc_redact_echo(const char *text, List *secrets);

/*
 * Statement text fit to store in an audit row: qc_redact_text(), palloc'd.
 * The last statement's is kept, so that the many calls of one statement
 * redact it once.  The secrets its calls send, which the statement may
 * have built (format(), ||, a prepared statement's parameter), depend on
 * the calls, not on the text: the caller removes them first
 * (qc_redact_secrets), so that what is kept is the text as it came after.
 */
extern char *qc_redact_statement(const char *sql);

#endif							/* QC_REDACT_H */
