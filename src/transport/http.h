/*-------------------------------------------------------------------------
 *
 * http.h
 *	  The transport (http.c): a call, or many at once, sent with libcurl
 *	  under the policy, redirects followed; and the request headers it
 *	  accepts from a caller.
 *
 *-------------------------------------------------------------------------
 */
#ifndef QC_HTTP_H
#define QC_HTTP_H

#include "nodes/pg_list.h"

#include "callrec.h"


/* What the owner of a call says when the transport is about to start it. */
typedef enum QcAdmission
{
	QC_ADMIT_START,				/* send it */
	QC_ADMIT_LATER,				/* not yet: ask again once a call in flight ended */
	QC_ADMIT_ENDED				/* never: the owner recorded why on the call */
} QcAdmission;

/*
 * How the transport talks to the owner of its calls (call.c).  The
 * transport knows nothing of audit, rate limits or budgets: it asks.
 *
 * admit: just before a call would start.  others_in_flight says whether
 * calls of this run are in flight (whose end could free what the call
 * waits for); QC_ADMIT_LATER is only answered then.
 * done: as each call ends, with a response or with a failure recorded on
 * it, in completion order; a call not admitted ends at once.
 * interrupted: on the error path (a query cancel ends the run), for each
 * call that was in flight.  It must not raise, wait or read the catalogs.
 * watch (may be NULL): at the start of the run and every
 * QC_TRANSPORT_WATCH_MS while it runs, outside any libcurl callback; it
 * answers whether the owner gave up any call (see abandoned).
 * abandoned (NULL with watch): has the owner given up this call?  One in
 * flight is cut off, its transfer aborted, and ends recorded as cancelled
 * (57014); one not started yet ends so at once, never sent.
 * feed (may be NULL): a run that is fed as it goes.  Asked at every turn
 * of the loop, outside any libcurl callback, for up to room more calls
 * (room: the slots no call holds or waits for), which it writes into
 * calls and counts; each is admitted already (admit is not asked for it).
 * The run ends once nothing is in flight and feed gives nothing; while
 * calls are in flight, the loop turns at least every QC_TRANSPORT_FEED_MS.
 */
typedef struct QcTransportHooks
{
	QcAdmission (*admit) (QcCall *call, bool others_in_flight, void *arg);
	void		(*done) (QcCall *call, void *arg);
	void		(*interrupted) (QcCall *call, void *arg);
	bool		(*watch) (void *arg);
	bool		(*abandoned) (QcCall *call, void *arg);
	int			(*feed) (QcCall **calls, int room, void *arg);
	void	   *arg;
} QcTransportHooks;

/* How often a run asks its owner's watch hook (milliseconds). */
#define QC_TRANSPORT_WATCH_MS 250
/* The longest a fed run waits before it asks its feed again (milliseconds). */
#define QC_TRANSPORT_FEED_MS 20

/*
 * Run the calls, at most concurrency at once (and at most
 * queryclaw.max_host_concurrency to one host), following redirects under
 * the policy.  A refusal, a transport error or a timeout is recorded on
 * its call, never raised or audited.  Only a query cancel or an internal
 * error ends the run early.
 */
extern void qc_http_execute_many(QcCall **calls, int ncalls, int concurrency,
								 const QcTransportHooks *hooks);

/*
 * What a call of the innermost run under way has received so far, for its
 * owner's watch hook (which runs between the run's turns): the body bytes
 * (decompressed, not NUL-terminated, *len of them) and the header block
 * of the response, or NULL when the call is not in flight or no response
 * has begun.  Valid until the run turns again.
 */
extern const char *qc_http_received(const QcCall *call, size_t *len,
									const char **head);

/* May a run start now, from inside the runs under way (one deep at most)? */
extern bool qc_http_can_nest(void);

/* Validate a method name (upper-cases it); raises 22023 when unknown. */
extern const char *qc_http_validate_method(const char *method);

/* Validate one header; raises 22023 for names or values that are unsafe. */
extern void qc_http_validate_header(const char *name, const char *value);

/* Append a header, validated as qc_http_validate_header() does. */
extern List *qc_http_add_header(List *headers, const char *name,
								const char *value);

/* Return the value of a request header (case-insensitive), or NULL. */
extern const char *qc_http_find_header(List *headers, const char *name);

#endif							/* QC_HTTP_H */
