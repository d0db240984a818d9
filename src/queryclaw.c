/*-------------------------------------------------------------------------
 *
 * queryclaw.c
 *	  Module entry point of queryclaw_ext.
 *
 * queryclaw_ext lets SQL reach the web (web_fetch, api_call, check_url,
 * web_search, and llm_chat_tools, a model that browses with them) under a policy the DBA sets with queryclaw.* settings, and records every
 * attempt in queryclaw.audit_log.  The parts, one concern per file:
 *
 *	guc.c		the settings
 *	netaddr.c	public and non-public IP ranges (pure C)
 *	rules.c		the allowlist and host list syntax (pure C)
 *	policy.c	URL parsing and the refusal decisions
 *	redact.c	secrets kept out of logs and audit rows
 *	http.c		the libcurl transport and redirects
 *	charset.c	character sets and conversion to the database encoding
 *	html.c		HTML: the charset decision, parsing (libxml2), the tree walk
 *	text.c		HTML as text (formats text and article)
 *	article.c	the main content of a page (formats article and markdown)
 *	markdown.c	HTML as Markdown
 *	metadata.c	what a page says about itself (format metadata)
 *	content.c	HTML in the format asked for: the dispatch above the writers
 *	json.c		JSON validation (cJSON)
 *	response.c	what the SQL functions return
 *	audit.c		the audit rows, durable or in the caller's transaction
 *	onerror.c	queryclaw.on_error: a failed call returns its error; the WARNING
 *	auditq.c	the shared-memory queue of audit records
 *	worker.c	the audit worker that commits them
 *	rolecount.c	per-role counts over a sliding window, in shared memory
 *	ratelimit.c	queryclaw.max_calls_per_hour
 *	budget.c	queryclaw.max_tokens_per_day and my_budget
 *	fetch.c, api.c, check.c		the SQL-callable functions
 *	chat.c		the OpenAI chat-completions wire format
 *	tools.c		the tools a model may call, each in a subtransaction
 *	search.c	web_search(), a SearXNG-compatible search API
 *	llm.c		llm_chat_tools(): the tool loop; web_fetch's extract
 *	sqltool.c	the database as a read-only tool: sql_query and its kin
 *	sqlcheck.c	what a statement given to sql_query may run
 *	embed.c		llm_embed(): an OpenAI-compatible embeddings endpoint
 *	bucket.c	the token bucket arithmetic (pure C)
 *	hostrate.c	queryclaw.host_rate_limit: the buckets in shared memory
 *	queue.c		the asynchronous requests' queue: shared memory, wake-up
 *	callbackhints.c	the callbacks handed over, told the callback workers
 *	enqueue.c	web_fetch_async, api_call_async, llm_chat_tools_async
 *	qwait.c		wait() and cancel_requests() on queued requests
 *	qretry.c	retry_requests(): failed and cancelled requests queued again
 *	hostlimits.c	host_limits(): the rate and cap the queue applies to a host
 *	asyncworker.c	the async workers: claim, recovery, retention
 *	asyncrun.c	a role's requests run as that role: retries, final states, hand-offs
 *	callbackworker.c	the callback workers: callbacks, fairly between roles
 *	rolesession.c	a role's session in a worker: settings, identity, bounded callbacks
 *	cluster.c	on a Citus cluster: the node's group, limits' shares from its node count
 *	clustergrant.c, clusterjoin.c	GRANTs sent to the workers, and copied by a node that joins
 *	servers.c, serversopts.c, serversfdw.c, serversadmit.c	endpoints: APIs as foreign servers
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "fmgr.h"
#include "miscadmin.h"

#include "asyncworker.h"
#include "auditq.h"
#include "bgsession.h"
#include "callbackhints.h"
#include "budget.h"
#include "cluster.h"
#include "compat.h"
#include "guc.h"
#include "hostrate.h"
#include "onerror.h"
#include "qinsert.h"
#include "queue.h"
#include "ratelimit.h"
#include "serversfdw.h"
#include "worker.h"

QC_MODULE_MAGIC;

void		_PG_init(void);

void
_PG_init(void)
{
	qc_guc_init();
	/* in every session that loads the library: servers are made anywhere */
	qc_serversfdw_init();
	/* and the end of a statement, for queryclaw.on_error's WARNING */
	qc_on_error_init();

	/*
	 * The durable audit and the rate limits live in shared memory, which
	 * only a preloaded library can have; without it calls are audited in
	 * the caller's transaction and a rate limit refuses every call.
	 */
	if (!process_shared_preload_libraries_in_progress)
		return;
	qc_bgsession_init();
	qc_auditq_init();
	qc_worker_init();
	qc_ratelimit_init();
	qc_budget_init();
	qc_hostrate_init();
	qc_queue_init();
	qc_queue_insert_init();
	qc_callback_hints_init();
	qc_asyncworker_init();
	qc_cluster_init();
	qc_cluster_grant_init();
	qc_cluster_join_init();
}
