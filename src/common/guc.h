/*-------------------------------------------------------------------------
 *
 * guc.h
 *	  The settings (guc.c), read by every part of queryclaw_ext.
 *
 * The policy settings are defined in guc.c; each C variable is named after
 * its setting (queryclaw.max_bytes is qc_max_bytes).  List settings are
 * parsed once, by their check hooks, into the structures declared in
 * policy.h; the parsed form is what the rest of the code reads.
 *
 *-------------------------------------------------------------------------
 */
#ifndef QC_GUC_H
#define QC_GUC_H

#include "rules.h"

/*
 * The bounds of settings that code above sizes arrays by: the most
 * transfers one batch may run at once (queryclaw.max_concurrency and the
 * other concurrency caps), and the most async workers.
 */
#define QC_MAX_CONCURRENCY_LIMIT 256
#define QC_ASYNC_MAX_WORKERS 16

extern bool qc_enabled;
extern int	qc_timeout;			/* milliseconds */
extern int	qc_max_chars;
extern int	qc_max_bytes;		/* kilobytes */
extern bool qc_block_local;
extern char *qc_local_allowlist;
extern char *qc_allowed_hosts;
extern char *qc_denied_hosts;
extern int	qc_max_redirects;
extern bool qc_read_only;
extern bool qc_servers_only;
extern char *qc_user_agent;
extern char *qc_proxy;
extern char *qc_ca_file;
extern bool qc_audit;
extern bool qc_audit_query;
extern int	qc_max_concurrency;
extern int	qc_max_host_concurrency;
typedef enum QcOnError
{
	QC_ON_ERROR_RAISE,
	QC_ON_ERROR_RETURN
} QcOnError;
extern int	qc_on_error;		/* a QcOnError (onerror.c) */
/* the LLM tool loop and web search */
extern char *qc_llm_url;
extern char *qc_llm_server;
extern char *qc_llm_model;
extern char *qc_llm_api_key;
extern int	qc_llm_timeout;		/* milliseconds */
extern int	qc_llm_max_rounds;
extern int	qc_llm_max_tool_calls;
extern int	qc_llm_max_tokens;	/* 0: not sent */
extern int	qc_llm_tool_max_chars;
extern char *qc_search_url;
extern char *qc_search_server;
extern char *qc_search_api_key;

/* retries (retry.c, endpoint.c) and provider differences (chat.c) */
extern int	qc_retry_max;
extern int	qc_retry_base_delay;	/* milliseconds */
extern int	qc_retry_max_delay; /* milliseconds */
typedef enum QcTokenParam
{
	QC_TOKEN_PARAM_MAX_TOKENS,
	QC_TOKEN_PARAM_MAX_COMPLETION_TOKENS
} QcTokenParam;
extern int	qc_llm_token_param;	/* a QcTokenParam */
extern char *qc_llm_api_key_header;

/* the durable audit and rate limits; the PGC_POSTMASTER ones need preload */
extern int	qc_max_calls_per_hour;
extern char *qc_database;
extern int	qc_audit_queue_size;	/* kilobytes */
extern char *qc_audit_retention;
extern int64 qc_audit_retention_us; /* parsed; 0 keeps rows forever */

/* the database tools, embeddings and token budgets */
extern int	qc_sql_timeout;		/* milliseconds */
extern int	qc_sql_max_rows;
extern char *qc_embed_url;
extern char *qc_embed_server;
extern char *qc_embed_model;
extern char *qc_embed_api_key;
extern int	qc_embed_batch_size;
extern int	qc_max_tokens_per_day;

/* the asynchronous queue (queue.c, enqueue.c; the workers) */
extern int	qc_async_workers;	/* 0 without shared_preload_libraries */
extern int	qc_async_concurrency;
extern char *qc_async_retention;
extern int64 qc_async_retention_us;	/* parsed; 0 keeps rows forever */
extern int	qc_callback_timeout;	/* milliseconds */
extern int	qc_max_queued_per_role;
extern char *qc_host_rate_limit;

/* on a Citus cluster (cluster.c): the nodes sharing the limits */
extern int	qc_cluster_nodes;

/* parsed forms of the list settings; never NULL once the GUCs exist */
extern const QcAddrList *qc_local_allowlist_parsed;
extern const QcHostList *qc_allowed_hosts_parsed;
extern const QcHostList *qc_denied_hosts_parsed;
extern const QcRateList *qc_host_rate_limit_parsed;

extern void qc_guc_init(void);

/* max_bytes in bytes */
#define QC_MAX_BYTES() ((size_t) qc_max_bytes * 1024)

#endif							/* QC_GUC_H */
