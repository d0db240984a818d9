/*-------------------------------------------------------------------------
 *
 * asyncworker.c
 *	  The async workers: background workers that run the queued requests of
 *	  queryclaw.requests, retry them, and record their final states or hand
 *	  them to the callback workers (README, "Asynchronous requests").
 *
 * queryclaw.async_workers of them are registered when the library is
 * preloaded; each connects to queryclaw.database as the audit worker does
 * (bgsession.c: the database's and role's settings cannot steer it) and
 * runs the queue as a service (README, "How the queue runs"):
 *
 * - It keeps up to queryclaw.async_concurrency calls on the wire through
 *   one fed run of the transport (call.c, qc_call_run_fed), which asks the
 *   worker for more whenever slots are free.  Outside the short
 *   transactions below, no transaction, snapshot or row lock is held: not
 *   while requests are on the wire.
 * - A service step (one short transaction, at most every
 *   QC_TRANSPORT_FEED_MS while calls are out) records the outcome of each
 *   request whose response arrived since (asyncrun.c; one with a callback
 *   is handed to the callback workers, callbackworker.c, woken as the step
 *   commits: no callback runs here), moves LLM requests on to their next
 *   round, and claims as many due requests as there are free slots:
 *   round-robin between the roles with due requests (one slot's turn
 *   each), oldest first within a role, never a paused role's.  A claimed
 *   request is 'running' and goes on the wire as the step commits, or
 *   (claimed ahead, below) when a slot comes free.
 * - While a backlog lasts, a step claims a few more requests than there
 *   are free slots (qc_async_ahead: a quarter of the slots, at most 16),
 *   and a slot that comes free takes one of those at once, without a
 *   step.  The outcomes then gather for the next step, which comes when
 *   the calls claimed ahead no longer fill the free slots, or
 *   QC_ASYNC_GATHER_MS after the first of them, or at once when a commit
 *   that queued (another role's request) or the chores call for it.  A
 *   step's two statements cost about as much to start as to write ten
 *   rows: at 64 in flight a step had recorded 8 or 9 outcomes, and a third
 *   of the worker's CPU went to starting them (docs/performance.md).
 * - Every QC_ASYNC_CHORES_MS it also looks for requests cancelled while
 *   out (their transfers are aborted) and records outcomes a user's
 *   transaction held back; once a minute (or as often as the retention,
 *   when shorter) it deletes finished requests older than
 *   queryclaw.async_retention (queue.c).
 * - With nothing out and nothing due, it sleeps on its latch, which a
 *   transaction that enqueued sets as it commits (queue.c), until the
 *   next request is due.
 *
 * Crashes: a request is 'running' on the wire between its claim and the
 * commit of its outcome (then, with a callback, until a callback worker
 * made it final; queue.h).  When the server starts (or restarts after a
 * crash, which restarts every worker), the worker of slot 0 first puts the
 * requests left 'running' on the wire back in the queue, as at-least-once
 * delivery wants, except a POST or PATCH without an idempotency key, which
 * may have been sent: it fails, "interrupted; not sent again", its callback
 * called.  One whose outcome was recorded is not sent again: its callback
 * runs after the restart.
 * The other workers claim nothing until that is done.  An error in the run
 * applies the same rule to the requests the worker had, but knows which of
 * them it never sent (claimed ahead, or waiting for their host's turn):
 * those go back to the queue whatever their method, their attempt not
 * counted.  The worker goes on a second later.
 *
 * The worker's statements run as queryclaw_writer inside a
 * security-restricted operation with the pinned settings, and name their
 * schema and operators; the requests run as their roles.
 *
 * SIGTERM: the worker claims nothing more, lets the calls on the wire end
 * (an LLM request between rounds goes back to the queue), and exits with
 * code 1, so that the postmaster starts it again (except during a
 * shutdown).
 *
 * Each async worker comes with a callback worker (callbackworker.c),
 * registered here too.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "catalog/pg_authid.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "postmaster/bgworker.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "tcop/tcopprot.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/memutils.h"
#include "utils/snapmgr.h"
#include "utils/syscache.h"
#include "utils/timestamp.h"
#include "utils/wait_event.h"

#include "asyncrun.h"
#include "enrichfeed.h"
#include "asyncworker.h"
#include "audit.h"
#include "call.h"
#include "bgsession.h"
#include "callbackworker.h"
#include "handoff.h"
#include "compat.h"
#include "guc.h"
#include "queue.h"
#include "rolesession.h"

#define QC_ASYNC_RESTART_S		5
#define QC_ASYNC_NAP_MS			1000	/* longest sleep while idle */
#define QC_ASYNC_RETRY_MS		1000	/* after a failed run */
#define QC_ASYNC_CHORES_MS		250 /* cancels, held-back outcomes */
#define QC_ASYNC_PROBE			8	/* claimed beyond the calls that ended,
									 * while hosts are at their limit */
#define QC_ASYNC_GATHER_MS		2	/* longest an outcome waits for its step
									 * while calls claimed ahead go out */
#define QC_BLOCKED_LOOK_MS		100 /* and how often it then looks */
#define QC_RETENTION_EVERY_MS	60000	/* or the retention, when shorter */
#define QC_RETENTION_BATCH		10000

PGDLLEXPORT void qc_async_worker_main(Datum main_arg);

static int	my_slot = 0;
static TimestampTz retention_at = 0;
static TimestampTz next_due = 0;	/* when the next queued request is due */

/*
 * The columns a claim returns (asyncrun.h's order).  Only a request whose
 * arguments were redacted has secrets (enqueue.c): the others cost no
 * look into request_secrets.
 */
#define REQUEST_COLUMNS \
	"r.id, r.role, r.func," \
	" CASE WHEN r.redacted THEN COALESCE((SELECT s.request FROM queryclaw.request_secrets s" \
	" WHERE s.id OPERATOR(pg_catalog.=) r.id), r.request) ELSE r.request END," \
	" r.callback, r.context, r.idempotency_key, r.attempts," \
	" CASE WHEN r.redacted THEN EXISTS (SELECT FROM queryclaw.request_secrets s" \
	" WHERE s.id OPERATOR(pg_catalog.=) r.id) ELSE false END," \
	" r.query, r.next_attempt_at"
#define COLUMN_NEXT_ATTEMPT_AT 11

/*
 * A request on the wire, not one whose outcome is recorded and whose
 * callback is due (queue.h): 'running' rows have no waiting otherwise.
 */
#define ON_THE_WIRE \
	QC_RUNNING_ROWS " AND r.state OPERATOR(pg_catalog.=) 'running' AND r.waiting IS NULL"

/* A POST or PATCH without an idempotency key, which must not be sent twice. */
#define UNREPEATABLE \
	"(r.func OPERATOR(pg_catalog.=) 'api_call_async' AND r.idempotency_key IS NULL" \
	" AND pg_catalog.upper(r.request OPERATOR(pg_catalog.->>) 'method')" \
	" OPERATOR(pg_catalog.=) ANY ('{POST,PATCH}'::pg_catalog.text[]))"

/*
 * What the worker has: the requests it claimed and not yet recorded, and
 * the admitted calls waiting for a slot (an LLM round may bring more than
 * there are).  Lives across runs: an LLM request waiting for its retry
 * stays while nothing is on the wire.
 */
typedef struct Worker
{
	MemoryContext cxt;			/* the flights' parent */
	List	   *flights;		/* of QcAsyncFlight *, in cxt */
	List	   *unsent;			/* of QcCall *, in cxt */
	bool		exhausted;		/* the last claim found fewer than it asked */
	bool		blocked;		/* its last claim put requests back for a
								 * host's concurrency */
	int			freed;			/* calls ended since the last claim */
	TimestampTz ended_since;	/* the first call that ended since the last
								 * step, or 0 */
	int			rotation;		/* whose turn comes first at the next claim */
	TimestampTz chores_at;
} Worker;

static Worker worker;

void
qc_asyncworker_init(void)
{
	for (int slot = 0; slot < qc_async_workers; slot++)
		qc_bgsession_register("qc_async_worker_main",
							  psprintf("queryclaw async worker %d", slot),
							  "queryclaw async worker", QC_ASYNC_RESTART_S,
							  Int32GetDatum(slot));
	qc_callbackworker_init();
	qc_enrich_worker_init();
}

/* A new flight for each row a statement returned, added to the worker's. */
static List *
take_rows(void)
{
	List	   *taken = NIL;

	for (uint64 i = 0; i < SPI_processed; i++)
	{
		QcAsyncFlight *f = qc_async_flight_new(worker.cxt, SPI_tuptable->vals[i],
											   SPI_tuptable->tupdesc);
		MemoryContext old = MemoryContextSwitchTo(worker.cxt);

		worker.flights = lappend(worker.flights, f);
		MemoryContextSwitchTo(old);
		taken = lappend(taken, f);
	}
	return taken;
}

static int
by_role(const void *a, const void *b)
{
	const QcAsyncFlight *fa = *(QcAsyncFlight *const *) a;
	const QcAsyncFlight *fb = *(QcAsyncFlight *const *) b;

	if (fa->r->role != fb->r->role)
		return fa->r->role < fb->r->role ? -1 : 1;
	return fa->r->id < fb->r->id ? -1 : fa->r->id > fb->r->id;
}

/* A step of asyncrun.c's on one role's flights. */
typedef void (*RoleStep) (QcAsyncFlight **flights, int n, List **calls, int *done);

/*
 * Run step on flights (a List), one role after another; the calls they
 * send join the worker's unsent calls.  Returns how many were recorded.
 */
static int
by_roles(List *flights, RoleStep step)
{
	int			n = list_length(flights);
	QcAsyncFlight **sorted = palloc(Max(n, 1) * sizeof(QcAsyncFlight *));
	List	   *calls = NIL;
	int			done = 0;
	int			i = 0;
	ListCell   *lc;
	MemoryContext old;

	foreach(lc, flights)
		sorted[i++] = lfirst(lc);
	qsort(sorted, n, sizeof(QcAsyncFlight *), by_role);
	for (int start = 0; start < n;)
	{
		int			end = start + 1;

		while (end < n && sorted[end]->r->role == sorted[start]->r->role)
			end++;
		step(sorted + start, end - start, &calls, &done);
		start = end;
	}
	old = MemoryContextSwitchTo(worker.cxt);
	worker.unsent = list_concat(worker.unsent, calls);
	MemoryContextSwitchTo(old);
	pfree(sorted);
	return done;
}

/* Free the flights that are over. */
static void
drop_over(void)
{
	List	   *kept = NIL;
	ListCell   *lc;
	MemoryContext old = MemoryContextSwitchTo(worker.cxt);

	foreach(lc, worker.flights)
	{
		QcAsyncFlight *f = lfirst(lc);

		if (qc_async_flight_over(f))
			qc_async_flight_free(f);
		else
			kept = lappend(kept, f);
	}
	list_free(worker.flights);
	worker.flights = kept;
	MemoryContextSwitchTo(old);
}

/*
 * Run work in a transaction of its own, connected to SPI; the callbacks it
 * handed over are told the callback workers once it committed.
 */
static void
in_transaction(const char *activity, void (*work) (void *arg), void *arg)
{
	qc_handoff_forget();		/* those of a transaction that failed */
	qc_bgsession_transaction(activity, work, arg);
	if (qc_handoff_hint())
		qc_queue_wake_callback_workers();
}

/* ---- claiming ---- */

/*
 * The roles a claim takes from, kept between claims: reading them costs a
 * statement, and while the queue is busy they change only when a request
 * is queued, comes due or ends a role's backlog.  So they are read again
 * when the worker is nudged (a commit that queued, a request come due),
 * after a claim that found fewer than it asked, and at every round of the
 * chores (a pause begun).  Each role's claims resume after the last
 * request claimed of it (in requests_role_due_idx's order), so that a
 * claim does not walk the index entries of the requests claimed before,
 * which stay until VACUUM or a scan sees their tuples dead to all (while
 * a snapshot is open elsewhere, they are not): a request that came due
 * behind that point was queued by a transaction whose commit nudged the
 * worker, or put back by the worker itself, later than that point.
 */
typedef struct ClaimRole
{
	Oid			role;
	TimestampTz after_at;		/* the last claimed's next_attempt_at */
	int64		after_id;		/* and id */
} ClaimRole;

static ClaimRole *claim_roles = NULL;	/* in TopMemoryContext */
static int	nclaim_roles = 0;
static bool claim_roles_stale = true;

/* What a claim takes: up to limit due requests of claim_roles, in turns. */
typedef struct ClaimScope
{
	int			limit;
	List	   *claimed;		/* out: the flights */
} ClaimScope;

static void next_due_time(void *arg);

/* The role of a waiting request, and of a due one (the same, due now). */
#define WAITING_OF_ROLE \
	"SELECT r.role::pg_catalog.oid FROM queryclaw.requests r" \
	" WHERE r.state OPERATOR(pg_catalog.=) ANY ('{queued,retrying}'::pg_catalog.text[])"
#define DUE_OF_ROLE \
	WAITING_OF_ROLE "   AND r.next_attempt_at OPERATOR(pg_catalog.<=) pg_catalog.now()"

/* through requests_role_due_idx: see QC_ROLES_OF */
#define ROLES_OF(OF_ROLE) QC_ROLES_OF(OF_ROLE, ", r.next_attempt_at")

/* One column of claim_roles, in turn order from the rotation, as an array. */
static Datum
claim_roles_column(int column)
{
	Datum	   *values = palloc(nclaim_roles * sizeof(Datum));

	for (int i = 0; i < nclaim_roles; i++)
	{
		ClaimRole  *c = &claim_roles[(i + worker.rotation) % nclaim_roles];

		values[i] = column == 0 ? ObjectIdGetDatum(c->role) :
			column == 1 ? TimestampTzGetDatum(c->after_at) : Int64GetDatum(c->after_id);
	}
	return qc_queue_array(values, NULL, nclaim_roles,
						  column == 0 ? OIDOID : column == 1 ? TIMESTAMPTZOID : INT8OID);
}

/* Move each role's starting point past the requests just claimed. */
static void
advance_claim_roles(void)
{
	for (uint64 i = 0; i < SPI_processed; i++)
	{
		HeapTuple	tuple = SPI_tuptable->vals[i];
		TupleDesc	desc = SPI_tuptable->tupdesc;
		bool		isnull;
		int64		id = DatumGetInt64(SPI_getbinval(tuple, desc, 1, &isnull));
		Oid			role = DatumGetObjectId(SPI_getbinval(tuple, desc, 2, &isnull));
		TimestampTz at = DatumGetTimestampTz(SPI_getbinval(tuple, desc,
														   COLUMN_NEXT_ATTEMPT_AT, &isnull));

		for (int r = 0; r < nclaim_roles; r++)
		{
			ClaimRole  *c = &claim_roles[r];

			if (c->role == role &&
				(at > c->after_at || (at == c->after_at && id > c->after_id)))
			{
				c->after_at = at;
				c->after_id = id;
			}
		}
	}
}

/* A role's due requests from where its last claim ended, oldest first. */
#define DUE_AFTER(ROLE, AFTER_AT, AFTER_ID) \
	"SELECT q.id, q.next_attempt_at FROM queryclaw.requests q" \
	" WHERE q.role::pg_catalog.oid OPERATOR(pg_catalog.=) " ROLE \
	"   AND q.state OPERATOR(pg_catalog.=) ANY ('{queued,retrying}'::pg_catalog.text[])" \
	"   AND (q.next_attempt_at, q.id) OPERATOR(pg_catalog.>) (" AFTER_AT ", " AFTER_ID ")" \
	"   AND q.next_attempt_at OPERATOR(pg_catalog.<=) pg_catalog.now()" \
	" ORDER BY q.next_attempt_at, q.id LIMIT $1 FOR UPDATE SKIP LOCKED"

/* The claim of the requests whose ids IDS selects. */
#define CLAIM(IDS) \
	"UPDATE queryclaw.requests r SET state = 'running'," \
	" attempts = r.attempts OPERATOR(pg_catalog.+) 1, waiting = NULL" \
	" WHERE r.id OPERATOR(pg_catalog.=) ANY (ARRAY(" IDS "))" \
	" RETURNING " REQUEST_COLUMNS

/*
 * Claim up to limit due requests, round-robin between the roles: each
 * role's oldest first from where its last claim ended (through
 * requests_role_due_idx), the first of every role before the second of
 * any, the roles in turn order.  With one role (a busy queue's usual
 * case) that is its oldest up to limit, claimed by a statement without the
 * turns, which costs less to start at every claim.
 */
static void
claim_rows(void *arg)
{
	static SPIPlanPtr plan = NULL;
	static SPIPlanPtr one_role_plan = NULL;
	ClaimScope *scope = arg;
	Oid			types[4] = {INT4OID, OIDARRAYOID, TIMESTAMPTZARRAYOID, INT8ARRAYOID};
	Oid			one_role_types[4] = {INT4OID, OIDOID, TIMESTAMPTZOID, INT8OID};
	Datum		values[4] = {Int32GetDatum(scope->limit)};
	int			rc;

	if (nclaim_roles == 1)
	{
		values[1] = ObjectIdGetDatum(claim_roles[0].role);
		values[2] = TimestampTzGetDatum(claim_roles[0].after_at);
		values[3] = Int64GetDatum(claim_roles[0].after_id);
		rc = SPI_execute_plan(qc_queue_plan(&one_role_plan,
											CLAIM("SELECT d.id FROM (" DUE_AFTER("$2", "$3", "$4") ") d"),
											4, one_role_types),
							  values, NULL, false, 0);
	}
	else
	{
		values[1] = claim_roles_column(0);
		values[2] = claim_roles_column(1);
		values[3] = claim_roles_column(2);
		rc = SPI_execute_plan(qc_queue_plan(&plan,
											CLAIM("SELECT c.id FROM ROWS FROM (pg_catalog.unnest($2),"
												  " pg_catalog.unnest($3), pg_catalog.unnest($4))"
												  " WITH ORDINALITY AS g(role, after_at, after_id, turn),"
												  " LATERAL (SELECT d.id, pg_catalog.row_number() OVER"
												  "  (ORDER BY d.next_attempt_at, d.id) AS place FROM ("
												  DUE_AFTER("g.role", "g.after_at", "g.after_id")
												  ") d) c ORDER BY c.place, g.turn LIMIT $1"),
											4, types),
							  values, NULL, false, 0);
	}
	if (rc != SPI_OK_UPDATE_RETURNING)
		elog(ERROR, "could not claim requests: %s", SPI_result_code_string(rc));
	advance_claim_roles();
	scope->claimed = take_rows();
	worker.exhausted = list_length(scope->claimed) < scope->limit;
	if (worker.exhausted)
		next_due_time(NULL);
}

/*
 * When the next request falls due, after a claim that found fewer than it
 * asked.  One due now is a paused role's (the next nap looks at it again),
 * another worker's (locked), or queued since the roles were read (see
 * claim): none is waited for here.
 */
static void
next_due_time(void *arg)
{
	static SPIPlanPtr plan = NULL;
	bool		isnull;
	int			rc;

	/* role by role through requests_role_due_idx: the cost of the roles */
	qc_queue_plan(&plan, ROLES_OF(WAITING_OF_ROLE)
				  " SELECT pg_catalog.min(n.at) FROM roles w,"
				  " LATERAL (SELECT r.next_attempt_at AS at FROM queryclaw.requests r"
				  "   WHERE r.role::pg_catalog.oid OPERATOR(pg_catalog.=) w.role"
				  "     AND r.state OPERATOR(pg_catalog.=) ANY ('{queued,retrying}'::pg_catalog.text[])"
				  "     AND r.next_attempt_at OPERATOR(pg_catalog.>) pg_catalog.now()"
				  "   ORDER BY r.next_attempt_at LIMIT 1) n"
				  " WHERE w.role IS NOT NULL",
				  0, NULL);
	rc = SPI_execute_plan(plan, NULL, NULL, true, 0);
	if (rc != SPI_OK_SELECT)
		elog(ERROR, "could not read the queue: %s", SPI_result_code_string(rc));
	next_due = DatumGetTimestampTz(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc,
												 1, &isnull));
	if (isnull)
		next_due = DT_NOEND;
}

/*
 * The roles that have due requests, as a List of OIDs (ROLES_OF: a look
 * costs the number of roles, not of the requests waiting: a paused role's
 * stay due, however many).
 */
static void
due_roles(void *arg)
{
	static SPIPlanPtr plan = NULL;
	int			rc;

	qc_queue_plan(&plan, ROLES_OF(DUE_OF_ROLE) " SELECT role FROM roles WHERE role IS NOT NULL",
				  0, NULL);
	rc = SPI_execute_plan(plan, NULL, NULL, true, 0);

	if (rc != SPI_OK_SELECT)
		elog(ERROR, "could not read the queue: %s", SPI_result_code_string(rc));
	*(List **) arg = NIL;
	for (uint64 i = 0; i < SPI_processed; i++)
	{
		bool		isnull;
		Oid			role = DatumGetObjectId(SPI_getbinval(SPI_tuptable->vals[i],
														  SPI_tuptable->tupdesc, 1, &isnull));

		*(List **) arg = lappend_oid(*(List **) arg, role);
	}
}

/*
 * The paused roles whose waiting requests say so already (note_pause): a
 * role's are marked once as its pause begins, not at every pass.
 */
static List *marked_paused = NIL;

/*
 * As the worker: requests.waiting of a paused role's waiting requests.  A
 * row a user's transaction holds (a cancel) is skipped, not waited for.
 */
static void
mark_paused_rows(void *arg)
{
	Oid			role = *(Oid *) arg;
	Oid			types[2] = {OIDOID, TEXTOID};
	Datum		values[2] = {ObjectIdGetDatum(role),
	CStringGetTextDatum(qc_queue_paused_reason(role))};

	if (SPI_execute_with_args("UPDATE queryclaw.requests u SET waiting = $2"
							  " WHERE u.id OPERATOR(pg_catalog.=) ANY (ARRAY("
							  "  SELECT r.id FROM queryclaw.requests r"
							  "   WHERE r.role::pg_catalog.oid OPERATOR(pg_catalog.=) $1"
							  "   AND r.state OPERATOR(pg_catalog.=) ANY ('{queued,retrying}'::pg_catalog.text[])"
							  "   AND r.waiting IS DISTINCT FROM $2"
							  "   FOR UPDATE SKIP LOCKED))",
							  2, types, values, NULL, false, 0) != SPI_OK_UPDATE)
		elog(ERROR, "could not mark a paused role's requests");
}

/* Note whether role is paused, marking its requests as its pause begins. */
static void
note_pause(Oid role, bool paused)
{
	MemoryContext old;

	if (!paused)
	{
		marked_paused = list_delete_oid(marked_paused, role);
		return;
	}
	if (list_member_oid(marked_paused, role))
		return;
	qc_async_as_writer(mark_paused_rows, &role);
	old = MemoryContextSwitchTo(TopMemoryContext);
	marked_paused = lappend_oid(marked_paused, role);
	MemoryContextSwitchTo(old);
}

/*
 * Read the roles whose due requests a claim may take into claim_roles
 * (see there), each from its first due request: not those for which
 * queryclaw.enabled is off, whose requests are left as they are, queued
 * and untouched (a paused queue of any size costs no write), and looked at
 * again at the next reading.  The turn order rotates by one role at every
 * claim, so that with fewer free slots than roles each role's turn comes.
 * Only the roles read here are claimed from, so that a request queued
 * since (its role perhaps paused) is not seen running before a reading
 * looks at its role.  The roles read, paused or not, are kept in
 * claim_roles_seen.
 */
static List *claim_roles_seen = NIL;	/* in TopMemoryContext */

static void
refresh_claim_roles(void)
{
	List	   *roles = NIL;
	int			nroles;
	MemoryContext old;

	qc_async_as_writer(due_roles, &roles);
	nroles = list_length(roles);
	old = MemoryContextSwitchTo(TopMemoryContext);
	list_free(claim_roles_seen);
	claim_roles_seen = list_copy(roles);
	if (claim_roles)
		pfree(claim_roles);
	claim_roles = palloc(Max(nroles, 1) * sizeof(ClaimRole));
	MemoryContextSwitchTo(old);
	nclaim_roles = 0;
	for (int i = 0; i < nroles; i++)
	{
		Oid			role = list_nth_oid(roles, i);

		/* a dropped role's requests go, to fail for that reason */
		bool		paused = SearchSysCacheExists1(AUTHOID, ObjectIdGetDatum(role)) &&
			qc_role_paused(role);

		note_pause(role, paused);
		if (paused)
			continue;
		claim_roles[nclaim_roles].role = role;
		claim_roles[nclaim_roles].after_at = DT_NOBEGIN;
		claim_roles[nclaim_roles].after_id = PG_INT64_MIN;
		nclaim_roles++;
	}
	claim_roles_stale = false;
}

/* Has a role with due requests come since claim_roles were read? */
static bool
new_due_role(void)
{
	List	   *roles = NIL;
	ListCell   *lc;

	qc_async_as_writer(due_roles, &roles);
	foreach(lc, roles)
		if (!list_member_oid(claim_roles_seen, lfirst_oid(lc)))
			return true;
	return false;
}

/* Claim up to limit requests and start them; returns how many were recorded. */
static int
claim(int limit)
{
	ClaimScope	scope = {limit, NIL};
	int			done = 0;

	if (claim_roles_stale)
		refresh_claim_roles();
	/* with none, no index scan passes over a paused queue's requests */
	if (nclaim_roles > 0)
		qc_async_as_writer(claim_rows, &scope);
	else
	{
		worker.exhausted = true;
		qc_async_as_writer(next_due_time, NULL);
	}
	worker.rotation++;
	if (worker.exhausted)
	{
		/* its requests were not claimed: the next claim looks at its role now */
		if (new_due_role())
			next_due = 0;
		claim_roles_stale = true;
	}
	if (scope.claimed != NIL)
		done = by_roles(scope.claimed, qc_async_start_role);
	list_free(scope.claimed);
	return done;
}

/* ---- recovery ---- */

/* Requests to put back in the queue: those left 'running', or these. */
typedef struct Requeue
{
	ArrayType  *ids;			/* int8[], or NULL for all */
	ArrayType  *unsent;			/* int8[] of those known never sent, or NULL */
	List	   *failed;			/* out: the unrepeatable ones, as flights */
} Requeue;

/*
 * Requests left 'running' on the wire (all of them, or those of ids): back
 * in the queue; the unrepeatable ones are read as flights, to be failed,
 * unless they are known never sent (unsent), which go back to the queue
 * like the others, their attempt not counted.
 * Those whose outcome is recorded are the callback workers'.  A row a
 * user's transaction holds (a cancel not yet committed) is skipped, not
 * waited for: that cancel ends it.
 */
static void
requeue_running(void *arg)
{
	Requeue    *rq = arg;
	Oid			types[2] = {INT8ARRAYOID, INT8ARRAYOID};
	Datum		ids[2];
	char		nulls[2];
	int			rc;

	ids[0] = rq->ids ? PointerGetDatum(rq->ids) : (Datum) 0;
	nulls[0] = rq->ids ? ' ' : 'n';
	ids[1] = rq->unsent ? PointerGetDatum(rq->unsent) : (Datum) 0;
	nulls[1] = rq->unsent ? ' ' : 'n';

	rc = SPI_execute_with_args("UPDATE queryclaw.requests u SET state = 'queued',"
							   " next_attempt_at = pg_catalog.now(),"
							   " attempts = CASE WHEN u.id OPERATOR(pg_catalog.=) ANY ($2)"
							   "  THEN u.attempts OPERATOR(pg_catalog.-) 1 ELSE u.attempts END"
							   " WHERE u.id OPERATOR(pg_catalog.=) ANY (ARRAY("
							   "  SELECT r.id FROM queryclaw.requests r"
							   "   WHERE " ON_THE_WIRE
							   "   AND (NOT " UNREPEATABLE " OR r.id OPERATOR(pg_catalog.=) ANY ($2))"
							   "   AND ($1 IS NULL OR r.id OPERATOR(pg_catalog.=) ANY ($1))"
							   "   FOR UPDATE SKIP LOCKED))",
							   2, types, ids, nulls, false, 0);
	if (rc != SPI_OK_UPDATE)
		elog(ERROR, "could not queue interrupted requests again: %s", SPI_result_code_string(rc));
	if (SPI_processed > 0)
		ereport(LOG,
				(errmsg("queryclaw async worker queued %llu interrupted request(s) again",
						(unsigned long long) SPI_processed)));
	rc = SPI_execute_with_args("SELECT " REQUEST_COLUMNS " FROM queryclaw.requests r"
							   " WHERE " ON_THE_WIRE " AND " UNREPEATABLE
							   " AND ($1 IS NULL OR r.id OPERATOR(pg_catalog.=) ANY ($1))"
							   " FOR UPDATE SKIP LOCKED",
							   1, types, ids, nulls, false, 0);
	if (rc != SPI_OK_SELECT)
		elog(ERROR, "could not read interrupted requests: %s", SPI_result_code_string(rc));
	rq->failed = take_rows();
}

static void
recover(void *arg)
{
	Requeue    *rq = arg;
	ListCell   *lc;

	qc_async_as_writer(requeue_running, rq);
	foreach(lc, rq->failed)
	{
		QcAsyncRequest *r = ((QcAsyncFlight *) lfirst(lc))->r;

		r->outcome = QC_ASYNC_FAILED;
		r->error = "interrupted; not sent again";
		r->sqlstate = pstrdup(unpack_sql_state(ERRCODE_OPERATOR_INTERVENTION));
	}
	if (rq->failed != NIL)
		ereport(LOG,
				(errmsg("queryclaw async worker failed %d interrupted POST or PATCH request(s)",
						list_length(rq->failed)),
				 errdetail("They may have been sent, and carry no idempotency key: they are not sent again.")));
	(void) by_roles(rq->failed, qc_async_start_role);
	drop_over();
}

/* Slot 0 recovers once per server start; the others wait for it. */
static bool
recovered(void)
{
	QcQueueShared *shared = qc_queue_shared();
	bool		done;
	Requeue		rq = {NULL, NULL, NIL};

	SpinLockAcquire(&shared->mutex);
	done = shared->recovered;
	SpinLockRelease(&shared->mutex);
	if (done || my_slot != 0)
		return done;
	in_transaction("recovering interrupted requests", recover, &rq);
	SpinLockAcquire(&shared->mutex);
	shared->recovered = true;
	SpinLockRelease(&shared->mutex);
	return true;
}

/* ---- chores: outcomes held back, retention ---- */

/* Outcomes a user's transaction held back: recorded again now. */
static int
record_deferred(void)
{
	int			n;
	QcAsyncFlight **taken = qc_async_take_deferred(worker.cxt, &n);
	List	   *flights = NIL;
	MemoryContext old = MemoryContextSwitchTo(worker.cxt);
	int			done;

	for (int i = 0; i < n; i++)
	{
		worker.flights = lappend(worker.flights, taken[i]);
		flights = lappend(flights, taken[i]);
	}
	MemoryContextSwitchTo(old);
	done = by_roles(flights, qc_async_start_role);
	list_free(flights);
	return done;
}

/*
 * Which of the worker's requests flight_ids gives.  After a failed run,
 * all it has includes those whose outcome the failed step recorded: the
 * step's transaction rolled back, and a step drops the flights it
 * recorded only at its end.
 */
typedef enum FlightSet
{
	FLIGHTS_ALL,				/* all it has */
	FLIGHTS_NOT_CANCELLED,		/* those whose cancel is not seen yet */
	FLIGHTS_NEVER_SENT			/* those it knows were never sent */
} FlightSet;

static ArrayType *flight_ids(FlightSet set);

static void
purge(void *arg)
{
	(void) qc_queue_purge(QC_RETENTION_BATCH);
}

/*
 * How often retention is applied: once a minute, or as often as the
 * retention itself when it is shorter, so that a short one is kept to.
 */
static long
retention_every_ms(void)
{
	int64		ms = qc_async_retention_us / 1000;

	return (ms > 0 && ms < QC_RETENTION_EVERY_MS) ? (long) ms : QC_RETENTION_EVERY_MS;
}

/* The chores, in the service step's transaction; how many were recorded. */
static int
chores(TimestampTz now)
{
	int			done = 0;

	if (qc_async_have_deferred())
		done += record_deferred();
	if (now >= retention_at)
	{
		qc_async_as_writer(purge, NULL);
		retention_at = TimestampTzPlusMilliseconds(GetCurrentTimestamp(), retention_every_ms());
	}
	worker.chores_at = TimestampTzPlusMilliseconds(now, QC_ASYNC_CHORES_MS);
	claim_roles_stale = true;	/* a pause begun, a request another worker let go */
	return done;
}

/* ---- the fed run ---- */

static bool
any_ready(TimestampTz now)
{
	ListCell   *lc;

	foreach(lc, worker.flights)
		if (qc_async_flight_ready(lfirst(lc), now))
			return true;
	return false;
}

/* A service step: what it may claim, and how many outcomes it recorded. */
typedef struct Service
{
	int			room;
	int			done;
} Service;

/* See the file header. */
static void
service(void *arg)
{
	Service    *sv = arg;
	TimestampTz now = GetCurrentTimestamp();
	TimestampTz wake_at;
	List	   *ready = NIL;
	ListCell   *lc;

	foreach(lc, worker.flights)
		if (qc_async_flight_ready(lfirst(lc), now))
			ready = lappend(ready, lfirst(lc));
	if (ready != NIL)
		sv->done += by_roles(ready, qc_async_continue_role);
	list_free(ready);
	if (now >= worker.chores_at)
		sv->done += chores(now);
	if (sv->room > 0)
	{
		sv->done += claim(sv->room);
		worker.blocked = qc_async_blocked_count() > 0;
		worker.freed = 0;
		/* the requests put back come due in about a response time */
		if (worker.blocked && !worker.exhausted)
			next_due = TimestampTzPlusMilliseconds(now, QC_BLOCKED_LOOK_MS);
	}
	/* a request put back in this step (a wait, a retry) is due again then */
	wake_at = qc_async_take_next_wake();
	if (wake_at != 0)
		next_due = Min(next_due, wake_at);
	drop_over();
}

/*
 * How many requests a step claims beyond the free slots (see the file
 * header): none while hosts are full (those would wait for them anyway),
 * nor while a call is out to a host that would not admit them
 * (qc_async_ahead_fits), nor when the worker stops.
 */
static int
claim_ahead(void)
{
	return worker.blocked || qc_bgsession_stop || !qc_async_ahead_fits() ? 0 : qc_async_ahead();
}

/*
 * May the step wait for more outcomes?  Yes while the calls claimed ahead
 * fill every free slot, not for longer than QC_ASYNC_GATHER_MS after the
 * first outcome, and not when nudged or the chores are due.
 */
static bool
step_may_wait(TimestampTz now, bool nudged, int room)
{
	return !nudged && now < worker.chores_at && worker.unsent != NIL &&
		list_length(worker.unsent) >= room &&
		(worker.ended_since == 0 ||
		 now < TimestampTzPlusMilliseconds(worker.ended_since, QC_ASYNC_GATHER_MS));
}

/*
 * The fed run's feed: a service step when something waits for one (an
 * outcome to record, a slot to fill with a due request, the chores), then
 * the calls to send, as many as there is room for.  A set latch (a commit
 * that enqueued, a configuration reload) makes the next claim look again
 * even when the last found nothing due.
 */
static int
feed(QcCall **calls, int room, void *arg)
{
	TimestampTz now = GetCurrentTimestamp();
	Service		sv = {0, 0};
	int			n = 0;
	bool		nudged = false;

	if (MyLatch->is_set)
	{
		if (qc_bgsession_next_pass())
			retention_at = 0;	/* a new retention applies at once */
		nudged = true;
	}
	if (next_due <= now)
	{
		/*
		 * Taken: the claim that follows reads the roles again, and one that
		 * finds fewer than it asked says when the next request is due.  Left
		 * set, it would make every step read them while a backlog lasts.
		 */
		nudged = true;
		next_due = DT_NOEND;
	}
	if (nudged)
	{
		worker.exhausted = false;
		claim_roles_stale = true;
	}
	if (!qc_bgsession_stop && !worker.exhausted)
		sv.room = room - list_length(worker.unsent) + claim_ahead();
	/*
	 * While hosts are full, a claim takes what their ended calls freed, and
	 * looks a little further when nudged (see claim).
	 */
	if (worker.blocked)
		sv.room = Min(sv.room, worker.freed + (nudged ? QC_ASYNC_PROBE : 0));
	if (!step_may_wait(now, nudged, room) &&
		(sv.room > 0 || any_ready(now) || now >= worker.chores_at))
	{
		worker.ended_since = 0;
		in_transaction("running requests", service, &sv);
		if (sv.done > 0)
			qc_queue_notify_finished();
	}
	while (n < room && worker.unsent != NIL)
	{
		calls[n++] = linitial(worker.unsent);
		worker.unsent = list_delete_first(worker.unsent);
	}
	return n;
}

static void
call_ended(QcCall *call, void *arg)
{
	worker.freed++;
	if (worker.ended_since == 0)
		worker.ended_since = GetCurrentTimestamp();
	qc_async_call_ended(call);
}

/* The ids of the worker's requests of a set, as an int8[] (NULL for none). */
static ArrayType *
flight_ids(FlightSet set)
{
	Datum	   *ids = palloc(Max(list_length(worker.flights), 1) * sizeof(Datum));
	int			n = 0;
	ListCell   *lc;

	foreach(lc, worker.flights)
	{
		QcAsyncFlight *f = lfirst(lc);

		if (set == FLIGHTS_ALL ||
			(set == FLIGHTS_NOT_CANCELLED && !qc_async_flight_over(f) && !f->r->cancel_seen) ||
			(set == FLIGHTS_NEVER_SENT && qc_async_flight_never_sent(f)))
			ids[n++] = Int64GetDatum(f->r->id);
	}
	return n == 0 ? NULL : construct_array(ids, n, INT8OID, 8, true, TYPALIGN_DOUBLE);
}

/*
 * As the worker: which of the flights were cancelled since they were
 * claimed.  A request counts as cancelled once its row is no longer
 * 'running': cancelled, but also deleted or truncated away (a cancel
 * followed at once by a clean-up would otherwise never be seen, and the
 * calls waiting for their host would still go out), or put back in the
 * queue by an administrator.
 */
static void
look_for_cancels(void *arg)
{
	static SPIPlanPtr plan = NULL;
	Oid			type = INT8ARRAYOID;
	ArrayType  *ids = flight_ids(FLIGHTS_NOT_CANCELLED);
	Datum		value;

	if (ids == NULL)
		return;
	value = PointerGetDatum(ids);
	qc_queue_plan(&plan, "SELECT u.id FROM pg_catalog.unnest($1) u(id)"
				  " WHERE NOT EXISTS (SELECT FROM queryclaw.requests r"
				  "  WHERE r.id OPERATOR(pg_catalog.=) u.id"
				  "   AND r.state OPERATOR(pg_catalog.=) 'running')", 1, &type);
	if (SPI_execute_plan(plan, &value, NULL, true, 0) != SPI_OK_SELECT)
		elog(ERROR, "could not read cancelled requests");
	for (uint64 t = 0; t < SPI_processed; t++)
	{
		bool		isnull;
		int64		id = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[t],
													 SPI_tuptable->tupdesc, 1, &isnull));
		ListCell   *lc;

		foreach(lc, worker.flights)
			if (((QcAsyncFlight *) lfirst(lc))->r->id == id)
				((QcAsyncFlight *) lfirst(lc))->r->cancel_seen = true;
		*(bool *) arg = true;
	}
}

static void
cancels_as_writer(void *arg)
{
	qc_async_as_writer(look_for_cancels, arg);
}

/* The transport's watch: were any of the requests out cancelled? */
static bool
cancels_since(void *arg)
{
	bool		found = false;

	if (worker.flights != NIL)
		in_transaction("looking for cancelled requests", cancels_as_writer, &found);
	return found;
}

/* The transport's question: was this call's request cancelled? */
static bool
request_cancelled(QcCall *call, void *arg)
{
	return ((QcAsyncFlight *) call->owner)->r->cancel_seen;
}

static const QcCallWatch cancel_watch = {cancels_since, request_cancelled};
static const QcCallFeed fed_run = {feed, call_ended, &cancel_watch, NULL};

/* ---- the loop ---- */

static void
find_queue(void *arg)
{
	*(bool *) arg = OidIsValid(qc_async_statement_role());
}

/*
 * When to look again once the run is over: the next request due, an LLM
 * request's retry, or the chores while outcomes are held back.
 */
static void
plan_wake(void)
{
	TimestampTz now = GetCurrentTimestamp();

	if (worker.flights != NIL || qc_async_have_deferred())
		next_due = Min(next_due, TimestampTzPlusMilliseconds(now, QC_ASYNC_CHORES_MS));
}

/* One run of the queue (see the file header), until nothing is out or due. */
static void
pass(void)
{
	bool		present = false;

	in_transaction("looking for the queue", find_queue, &present);
	if (!present)
	{
		next_due = DT_NOEND;	/* no queue here yet: a commit wakes us */
		return;
	}
	if (!recovered())
		return;
	worker.exhausted = false;
	qc_call_run_fed(qc_async_concurrency, &fed_run);
	plan_wake();
}

/*
 * After a failed run: the calls that ended but were not taken in, and
 * those not sent, give their audit room back (one that ended keeps the
 * row made as its response arrived); the requests the worker had go back
 * to the queue (or fail, unrepeatable), and everything it held is freed.
 */
static void
release(void)
{
	MemoryContext cxt = CurrentMemoryContext;
	Requeue		rq = {flight_ids(FLIGHTS_ALL), flight_ids(FLIGHTS_NEVER_SENT), NIL};
	ListCell   *lc;

	foreach(lc, worker.flights)
	{
		ListCell   *c;

		foreach(c, ((QcAsyncFlight *) lfirst(lc))->ended)
			qc_audit_abandon(lfirst(c));
	}
	foreach(lc, worker.unsent)
		qc_audit_abandon(lfirst(lc));
	MemoryContextReset(worker.cxt);
	worker.flights = worker.unsent = NIL;
	qc_async_hosts_reset();
	claim_roles_stale = true;	/* its requests go back to the queue */
	if (rq.ids == NULL)
		return;
	PG_TRY();
	{
		in_transaction("releasing the requests of a failed run", recover, &rq);
	}
	PG_CATCH();
	{
		/* left 'running': the next server start recovers them */
		MemoryContextSwitchTo(cxt);
		EmitErrorReport();
		FlushErrorState();
		AbortCurrentTransaction();
		MemoryContextReset(worker.cxt);
		worker.flights = worker.unsent = NIL;
	}
	PG_END_TRY();
}

/* A run; an error is logged, and the worker's requests released. */
static void
safe_pass(MemoryContext cxt)
{
	PG_TRY();
	{
		pass();
	}
	PG_CATCH();
	{
		qc_bgsession_recover(cxt);
		release();
		next_due = TimestampTzPlusMilliseconds(GetCurrentTimestamp(), QC_ASYNC_RETRY_MS);
	}
	PG_END_TRY();
	MemoryContextReset(cxt);
}

/* Sleep until the latch is set, the next request is due, or a nap passed. */
static void
wait_for_work(void)
{
	TimestampTz now = GetCurrentTimestamp();
	long		ms = QC_ASYNC_NAP_MS;

	if (next_due != DT_NOEND && next_due > now)
		ms = Min(ms, (long) ((next_due - now) / 1000) + 1);
	else if (next_due != DT_NOEND)
		ms = 0;
	if (ms <= 0)
		return;
	(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
					 ms, qc_wait_event(QC_WAIT_ASYNC_WORKER));
}

void
qc_async_worker_main(Datum main_arg)
{
	MemoryContext cxt;

	my_slot = DatumGetInt32(main_arg);
	qc_bgsession_start(qc_database);
	qc_queue_attach_worker(my_slot);
	cxt = AllocSetContextCreate(TopMemoryContext, "queryclaw async worker pass",
								ALLOCSET_DEFAULT_SIZES);
	worker.cxt = AllocSetContextCreate(TopMemoryContext, "queryclaw async requests",
									   ALLOCSET_DEFAULT_SIZES);
	ereport(LOG,
			(errmsg("queryclaw async worker %d started in database \"%s\"", my_slot, qc_database)));

	while (!qc_bgsession_stop)
	{
		if (qc_bgsession_next_pass())
			retention_at = 0;	/* a new retention applies at once */
		MemoryContextSwitchTo(cxt);
		safe_pass(cxt);
		wait_for_work();
	}
	proc_exit(1);
}
