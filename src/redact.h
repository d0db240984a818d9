/*-------------------------------------------------------------------------
 *
 * redact.h
 *	  Keeping secrets out of the audit log, error messages and redirects.
 *
 *-------------------------------------------------------------------------
 */
#ifndef QC_REDACT_H
#define QC_REDACT_H

/* Is this a header (or query parameter) name whose value is a secret? */
extern bool qc_name_is_secret(const char *name, bool is_header);

/*
 * A copy of url fit to show or store: userinfo and fragment removed, the
 * values of secret-looking query parameters replaced by REDACTED.  Works on
 * any text, including URLs that do not parse.
 */
extern char *qc_redact_url(const char *url);

/*
 * text with every occurrence of the configured API keys
 * (queryclaw.llm_api_key, queryclaw.search_api_key; 8 characters or more)
 * replaced by REDACTED, in a palloc'd copy (text itself when no key
 * occurs): for what an endpoint sends back, and for statement text stored
 * in audit rows.
 */
extern const char *qc_redact_keys(const char *text);

#endif							/* QC_REDACT_H */
