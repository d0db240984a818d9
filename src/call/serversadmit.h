/*-------------------------------------------------------------------------
 *
 * serversadmit.h
 *	  A call under a foreign server of the queryclaw wrapper, as its owner
 *	  (call.c) admits and ends it (serversadmit.c): servers_only, the
 *	  server's concurrency cap and rate limit, its mapping put on the call,
 *	  and what the server may see of the response.
 *
 * Which server a URL is under, and the role's mapping for it, are read as
 * the call is built (policy/servers.h).
 *
 *-------------------------------------------------------------------------
 */
#ifndef QC_SERVERSADMIT_H
#define QC_SERVERSADMIT_H

#include "servers.h"

/* What the server says as the transport is about to start a call. */
typedef enum QcServerAdmission
{
	QC_SERVER_START,			/* go on admitting it */
	QC_SERVER_LATER,			/* the server's concurrency cap is reached */
	QC_SERVER_REFUSED			/* refused: recorded on the call */
} QcServerAdmission;

/*
 * Before the call's audit row has room: the server's concurrency cap
 * (QC_SERVER_LATER only when others_in_flight).
 */
extern QcServerAdmission qc_server_admit_slot(QcCall *call, bool others_in_flight);

/*
 * Once it has: the mapping's headers and parameters and the server's
 * timeout are put on the call; then queryclaw.servers_only and the
 * server's rate limit (a synchronous caller waits for a token within the
 * call's timeout) are asked.  A refusal is recorded on the call.
 */
extern QcServerAdmission qc_server_admit(QcCall *call);

/*
 * queryclaw.servers_only's refusal of the call (its URL is under no server
 * the role has USAGE on), or NULL: what qc_server_admit() refuses it with,
 * for check_url's dry run.
 */
extern const QcVerdict *qc_server_refusal(const QcCall *call);

/* The call admitted under a server ended: its slot is free again. */
extern void qc_server_release(QcCall *call);

/*
 * The call's response as the caller, the queue and a model may see it:
 * every value its mapping sent replaced by REDACTED, in the body, the
 * response headers and the final URL (a server may echo the key).
 */
extern void qc_server_redact_response(QcCall *call);

/* The server to name in the call's audit row (detail.server), or NULL. */
extern const char *qc_server_audit_name(const QcCall *call);

/*
 * How many retries a call may get: fallback (queryclaw.retry_max as the
 * role has it), or its server's retry_max when that is fewer.
 */
extern int	qc_server_retry_max(const QcCall *call, int fallback);

/*
 * For the asynchronous worker, before it sends a request's call (built as
 * the enqueuing role): may it go now under its server's rate_limit?  As
 * qc_hostrate_admit() answers for a host: true (the token is the call's:
 * the transport's admission takes no other), or false with *go_at the time
 * a token is promised for.  When the request comes back at that time, the
 * worker marks its new call with qc_server_rate_promised() instead of
 * asking again.  (The transport's admission asks itself for a call that
 * was not asked for here, and refuses it with 53400 and retry_at rather
 * than wait in a worker.)
 */
extern bool qc_server_rate_admit(QcCall *call, TimestampTz now,
								 TimestampTz *go_at);
extern void qc_server_rate_promised(QcCall *call);

#endif							/* QC_SERVERSADMIT_H */
