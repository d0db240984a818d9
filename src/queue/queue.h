/*-------------------------------------------------------------------------
 *
 * queue.h
 *	  The asynchronous requests' queue (queue.c): its shared memory, how a
 *	  committing transaction wakes the async workers, and what the workers
 *	  call on the table queryclaw.requests.  The SQL functions that write
 *	  and read it are enqueue.c's and qwait.c's.
 *
 * The table (README, "Asynchronous requests"):
 *
 * - A row is written by an enqueue function, as the table's owner, in the
 *   caller's transaction, state 'queued'.  When redacting the arguments
 *   changed something, the arguments as given are in
 *   queryclaw.request_secrets under the same id (and requests.redacted
 *   is true): a worker reads that row when it exists, else
 *   requests.request, and deletes it when the request is final.
 * - retry_requests (qretry.c) puts a failed or cancelled request back to
 *   'queued' under its id, unless it was redacted: its secrets are gone.
 * - callback is text: the callback's regprocedure output (schema-qualified
 *   signature), looked up again when it is called (see the 0.1--0.2
 *   script for why it is not a regprocedure column).
 * - Cancelling (cancel_requests) sets state 'cancelled', error 'cancelled',
 *   sqlstate 57014, and deletes the secrets row, in the canceller's
 *   transaction.  finished_at is set at once when the row has no callback;
 *   with a callback it stays NULL and waiting says QC_WAITING_CALLBACK: a
 *   callback worker calls the callback (as for any final state) and then
 *   sets finished_at.  A request a worker was running when it was
 *   cancelled is noticed as the worker records its outcome (the row is no
 *   longer 'running').
 * - Retention (qc_queue_purge) deletes only rows with finished_at set.
 * - Callbacks run in the callback workers, not in the async workers that
 *   send the requests.  A request whose outcome is final and that has a
 *   callback to call is handed to them with waiting set to
 *   QC_WAITING_CALLBACK: one answered (or failed) keeps state 'running',
 *   its result, error and sqlstate stored; one cancelled is 'cancelled'
 *   with finished_at NULL.  A callback worker calls the callback and, in
 *   the same transaction, makes the request final: 'cancelled' stays so,
 *   a request with a sqlstate becomes 'failed' (a failed outcome always
 *   has one), any other 'done'; finished_at is set and waiting cleared.
 *   Such a request is never sent again: the recovery at a server start
 *   leaves it to them.  cancel_requests() no longer applies to it (its
 *   response came), and retry_requests() of a cancelled one clears the
 *   mark: the callback is called for the new attempt's outcome instead.
 *
 * Locking rules of QcQueueShared: the mutex protects worker_latch,
 * recovered, prepared_gid, next_prepared and callback_latch; finished is a
 * condition variable (no lock).  Nothing is done under the mutex but reading or
 * writing those fields.  Fields are appended at the end of the struct.
 *
 *-------------------------------------------------------------------------
 */
#ifndef QC_QUEUE_H
#define QC_QUEUE_H

#include "executor/spi.h"
#include "storage/condition_variable.h"
#include "storage/latch.h"
#include "storage/spin.h"
#include "utils/array.h"
#include "utils/jsonb.h"

#include "guc.h"


/* Prepared transactions whose COMMIT PREPARED wakes the workers, at most. */
#define QC_PREPARED_KEPT 64

/* The function names a request's func holds. */
#define QC_FUNC_WEB_FETCH_ASYNC "web_fetch_async"
#define QC_FUNC_API_CALL_ASYNC "api_call_async"
#define QC_FUNC_LLM_CHAT_TOOLS_ASYNC "llm_chat_tools_async"
/* an enrichment's embedding request, a job of the model's kind (llmjob.h) */
#define QC_FUNC_ENRICHMENT_EMBED_ASYNC "enrichment_embed_async"

typedef struct QcQueueShared
{
	slock_t		mutex;
	/* the async workers' latches, by slot (0 .. async_workers - 1); NULL when none */
	Latch	   *worker_latch[QC_ASYNC_MAX_WORKERS];
	/* broadcast by the workers after committing final states (wait()) */
	ConditionVariable finished;
	/*
	 * the requests left 'running' by the previous server (or by a crash)
	 * were put back in the queue (asyncworker.c); set once per start
	 */
	bool		recovered;
	/*
	 * the GIDs (hashed, never 0; 0 is a free slot) of the last
	 * QC_PREPARED_KEPT transactions prepared after enqueueing or
	 * cancelling, whose COMMIT PREPARED wakes the workers (queue.c); a
	 * ring, next_prepared its next slot
	 */
	uint32		prepared_gid[QC_PREPARED_KEPT];
	int			next_prepared;
	/* the callback workers' latches, by slot; NULL when none */
	Latch	   *callback_latch[QC_ASYNC_MAX_WORKERS];
	/* the enrichment worker's latch (enrichfeed.c); NULL when none */
	Latch	   *enrich_latch[1];
} QcQueueShared;

/*
 * requests.waiting of a request whose callback is due (see above).  No
 * index reads waiting, so that marking a request so is a HOT update; the
 * callback workers find these requests through requests_running_idx,
 * whose predicate QC_RUNNING_ROWS repeats (a query must, to use it).
 */
#define QC_WAITING_CALLBACK "callback queued"
#define QC_RUNNING_ROWS \
	"r.state OPERATOR(pg_catalog.=) ANY ('{running,cancelled}'::pg_catalog.text[])" \
	" AND r.finished_at IS NULL"

/*
 * "roles(role)": the roles of the requests OF_ROLE selects ("SELECT
 * r.role::pg_catalog.oid FROM queryclaw.requests r WHERE ..."), read role
 * after role through an index that leads with role (each step the next
 * role with such a request), so that reading them costs the number of
 * roles, not of the requests; the last row's role is NULL.  THEN names the
 * index's next columns (", r.next_attempt_at"), so that only the index
 * meant serves the order, whatever the statistics say: with the role
 * alone, another index on the role (0.2's of open requests) served it
 * too, and a look walked a role's requests on the wire.
 */
#define QC_ROLES_OF(OF_ROLE, THEN) \
	"WITH RECURSIVE roles(role) AS (" \
	" (" OF_ROLE " ORDER BY r.role" THEN " LIMIT 1)" \
	" UNION ALL" \
	" SELECT (" OF_ROLE \
	"   AND r.role::pg_catalog.oid OPERATOR(pg_catalog.>) roles.role" \
	"   ORDER BY r.role" THEN " LIMIT 1)" \
	" FROM roles WHERE roles.role IS NOT NULL)"

/*
 * A request id is the node's Citus group id (0 on the coordinator, and
 * without Citus) shifted by QC_NODE_ID_SHIFT bits, plus a number from the
 * node's own sequence, as Citus makes its sequences' values unique across
 * nodes: a node queues 2^48 requests before its ids meet the next node's.
 */
#define QC_NODE_ID_SHIFT 48

/* What this node's request ids start from (the caller is in a transaction). */
extern int64 qc_queue_id_base(void);

/*
 * On a Citus cluster, raise 0A000 for an id among ids (bigint[]) that
 * another node queued: what (wait, cancel_requests, retry_requests) would
 * find no request, or another request, under it here.
 */
extern void qc_queue_check_ids(ArrayType *ids, const char *what);

/* _PG_init, while preloading: the shared memory hooks. */
extern void qc_queue_init(void);

/* The shared state; NULL without shared_preload_libraries. */
extern QcQueueShared *qc_queue_shared(void);

/*
 * Raise 55000 unless this backend may use the queue: the library is
 * preloaded, queryclaw.async_workers is not 0, and this is
 * queryclaw.database.  what names the function for the message.
 */
extern void qc_queue_require(const char *what);

/*
 * Note that this transaction enqueued or cancelled requests: at commit,
 * the async workers' latches are set; with callbacks, when it cancelled
 * requests that have one to call, the callback workers' too.
 */
extern void qc_queue_wake_at_commit(bool callbacks);
extern Oid	qc_queue_table_owner(void);

/*
 * Admit one more request of role's (queryclaw.max_queued_per_role): 53400
 * when the role has that many unfinished ones.  The caller runs as the
 * table's owner.  The count is read once per transaction,
 * under the role's enqueue lock (held to the end of the transaction, so
 * that concurrent transactions of the role count one after the other),
 * and then kept up by this backend.
 */
extern void qc_queue_admit(Oid role);

/* What requests.waiting says of a request whose role is paused. */
extern char *qc_queue_paused_reason(Oid role);

/*
 * A callback: a function or procedure (not returning a set) taking
 * (bigint, jsonb, text, jsonb) that the current role may execute; 22023 or
 * 42501 otherwise.  Returns its signature, schema-qualified, as
 * requests.callback keeps it.
 */
extern char *qc_queue_check_callback(Oid fn);

/* The workers' side: an async worker's, a callback worker's. */
extern void qc_queue_attach_worker(int slot);
extern void qc_queue_attach_callback_worker(int slot);
extern void qc_queue_attach_enrich_worker(void);
extern void qc_queue_notify_finished(void);

/* Wake the callback workers: callbacks were handed to them. */
extern void qc_queue_wake_callback_workers(void);

/*
 * Wake the enrichment worker once this transaction commits: it may have
 * made rows stale, or changed what an enrichment asks.
 */
extern void qc_queue_wake_enrich_worker_at_commit(void);

/*
 * Call a request's callback fn (callback: its signature, requests.callback,
 * for messages) with (id, result, error, context), as the current role:
 * the worker has taken the request's role, found fn by that signature and
 * checked the role's EXECUTE on it under the latest snapshot, and is in a
 * security-restricted operation, in the transaction that records the final
 * state.  result and context may be NULL (SQL NULL), as error.  A callback
 * dropped since (42883), or that no longer has a callback's shape (22023),
 * raises, and the request fails with that.  A STRICT function given a NULL
 * is not called, as SQL would not.  Its result, if any, is ignored.
 */
extern void qc_queue_call_callback(Oid fn, const char *callback, int64 id, Jsonb *result,
								   const char *error, Jsonb *context);

/*
 * Delete finished rows (finished_at set) older than queryclaw.async_retention,
 * at most max_rows of them; returns how many.  0 when the retention is 0
 * (keep forever).  The caller is connected to SPI, in a transaction, as a
 * role that may delete the rows (queryclaw_writer, or the owner).
 */
extern uint64 qc_queue_purge(int max_rows);

/*
 * Connect to SPI as the owner of queryclaw.requests, in a
 * security-restricted operation, as the enqueue functions and
 * cancel_requests() write (callers have no privilege on the table); end
 * gives the caller's identity back.  An error in between restores it with
 * the (sub)transaction's abort.
 */
typedef struct QcQueueAsOwner
{
	Oid			save_userid;
	int			save_sec_context;
} QcQueueAsOwner;
extern void qc_queue_begin_as_owner(QcQueueAsOwner *save);
extern void qc_queue_end_as_owner(const QcQueueAsOwner *save);

/*
 * A one-dimensional array of n values of type (NULL elements where isnull
 * says, isnull itself may be NULL), as the statements on the queue take
 * their rows' columns.
 */
extern Datum qc_queue_array(Datum *values, bool *isnull, int n, Oid type);

/* An SPI plan made once per backend and kept (*plan is NULL until then). */
extern SPIPlanPtr qc_queue_plan(SPIPlanPtr *plan, const char *sql, int nargs, Oid *types);

#endif							/* QC_QUEUE_H */
