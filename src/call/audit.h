/*-------------------------------------------------------------------------
 *
 * audit.h
 *	  One queryclaw.audit_log row per attempted call, written either by the
 *	  audit worker (durable) or in the caller's transaction.
 *
 *-------------------------------------------------------------------------
 */
#ifndef QC_AUDIT_H
#define QC_AUDIT_H

#include "lib/stringinfo.h"

#include "callrec.h"

/* The text columns of an audit row, in the order records carry them. */
typedef enum QcAuditText
{
	QC_AT_ROLE,
	QC_AT_FUNC,
	QC_AT_METHOD,
	QC_AT_URL,
	QC_AT_FINAL_URL,
	QC_AT_OUTCOME,
	QC_AT_REASON,
	QC_AT_QUERY,
	QC_AT_DETAIL,				/* JSON text */
	QC_AUDIT_NTEXT
} QcAuditText;

/*
 * One audit row.  Every text is bounded (see audit.c) so that an encoded
 * record never exceeds QC_AUDIT_MAX_RECORD bytes: that is the room a call
 * reserves in the queue before it sends anything.
 */
typedef struct QcAuditRecord
{
	Oid			dboid;			/* the database whose audit_log gets it */
	Oid			roleid;			/* the calling role (role_id); the name is text */
	TimestampTz at;				/* when the call ended */
	int32		pid;
	int32		status;			/* 0 when no response arrived */
	int32		chars;			/* -1 when nothing was returned */
	bool		truncated;
	int64		bytes;
	double		elapsed_ms;
	const char *text[QC_AUDIT_NTEXT];	/* NULL is SQL NULL */
} QcAuditRecord;

/* Room one encoded record may take, its length word included. */
#define QC_AUDIT_MAX_RECORD (20 * 1024)

/* Whether a call may start, as far as its audit record goes. */
typedef enum QcAuditRoom
{
	QC_AUDIT_ROOM,				/* it has room for its record (or needs none) */
	QC_AUDIT_DEFER,				/* no room yet: try again once a call ended */
	QC_AUDIT_NO_ROOM			/* none came free in time: it must not start */
} QcAuditRoom;

/*
 * The life of a call, as its owner (call.c) reports it from the transport's
 * hooks (http.h).  The call holds its reservation (QcCall.audit_pending).
 *
 * begin, before anything is sent, reserves room for the call's record in
 * the queue.  With may_defer (other calls of the caller's are in flight),
 * it does not wait: QC_AUDIT_DEFER means no room yet, try again once one
 * of them has ended (waiting would hold up the calls whose end frees room).
 * Otherwise it waits, at most the call's timeout; with QC_AUDIT_NO_ROOM the
 * caller fails the call (qc_audit_queue_full's words, 53000, not audited:
 * nothing was sent, and there is no room).
 *
 * response, when the call's transfer ended.  interrupted, on the error path
 * of the transfer (a query cancel): it never waits nor reads the catalogs.
 */
extern QcAuditRoom qc_audit_begin(QcCall *call, bool may_defer);
extern void qc_audit_response(QcCall *call);

/*
 * The call outlives the transaction it began in (the async worker sends
 * its calls between transactions): its reservation stays until the call
 * ends, whatever transactions end meanwhile.
 */
extern void qc_audit_detach(QcCall *call);

/*
 * The call's owner dropped it (the async worker, after a failed run): the
 * record made as its response arrived is queued, if there is one, else its
 * room is given back.  Reads nothing but the call's reservation.
 */
extern void qc_audit_abandon(QcCall *call);
extern void qc_audit_interrupted(QcCall *call);

/* The error of a call that found no room for its record within waited_ms. */
extern void qc_audit_queue_full(int waited_ms, const char *setting,
								const char **message, char **detail,
								const char **hint);

/*
 * Record the call (whatever its outcome) when queryclaw.audit is on: through
 * the audit worker when this database is the one it writes into, else in
 * the caller's transaction (if that transaction aborts, the row goes too).
 * Only the call's owner (call.c) calls it, once per call.  The outcome
 * "checked" is written "ok" while this database has release 0.1's
 * audit_log, whose CHECK constraint does not know it.
 */
extern void qc_audit_call(QcCall *call);

/*
 * Hold the rows qc_audit_call writes in the caller's transaction until
 * qc_audit_release: work that runs in a subtransaction which may roll back
 * (queryclaw.on_error = 'return': onerror.c) keeps its calls' rows.  Holds
 * nest; when the outermost one is released, the rows are written in the
 * transaction under way, or dropped (write false: an error that ends the
 * statement, which would have taken them anyway).  The durable audit
 * needs no hold.
 */
extern void qc_audit_hold(void);
extern void qc_audit_release(bool write);

/*
 * The text of the statement under way as an audit row of call stores it
 * (bounded, secrets removed: its calls' too, call's included; call may be
 * NULL when the statement makes no call yet); NULL when none is stored
 * (queryclaw.audit_query off).  What an asynchronous request keeps of its
 * enqueuing statement, for the audit rows of its attempts (QcCall.query).
 */
extern char *qc_audit_statement(const QcCall *call);

/* Records as the queue carries them. */
extern void qc_audit_record_encode(const QcAuditRecord *rec, StringInfo buf);
extern void qc_audit_record_decode(const char *data, QcAuditRecord *rec);

/* Insert n rows; the caller is connected to SPI and may write the table. */
extern void qc_audit_insert(const QcAuditRecord *recs, int n);
extern Oid	qc_audit_table_owner(void);

#endif							/* QC_AUDIT_H */
