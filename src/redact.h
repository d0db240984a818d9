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
 * values of secret-looking query parameters replaced by REDACTED, control
 * characters written as %XX.  Works on any text, including URLs that do
 * not parse.
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

/*
 * Statement text fit to store in an audit row: the configured API keys,
 * URL userinfo and secret query parameters in every http(s) URL, secret
 * query parameters elsewhere ("?token=…" in a partial URL), and the
 * quoted value after a quoted secret-looking name (in JSON or in a list of
 * SQL literals) replaced by REDACTED.  Errs on the side of hiding.
 */
extern char *qc_redact_statement(const char *sql);

#endif							/* QC_REDACT_H */
