/*
 * compat.h: what differs between the PostgreSQL majors queryclaw_ext builds
 * against (15 and newer), in one place, behind PG_VERSION_NUM.
 *
 * The code is written against 15's API; where a newer server changed a
 * signature or removed a name, a macro or small function here gives every
 * major the same call.  Where a newer server offers something users see
 * (named wait events on 17, the module's name and version on 18), it is
 * used there and left out before.
 */
#ifndef QC_COMPAT_H
#define QC_COMPAT_H

#include "postgres.h"

#include "common/jsonapi.h"

/*
 * 18 dropped the postfix pg_attribute_noreturn() for a prefix pg_noreturn;
 * the postfix form is GCC's attribute, which every compiler the server
 * builds with on Debian understands.
 */
#ifndef pg_attribute_noreturn
#if defined(__GNUC__) || defined(__clang__)
#define pg_attribute_noreturn() __attribute__((noreturn))
#else
#define pg_attribute_noreturn()
#endif
#endif

/*
 * The magic block: 18 can also carry the module's name and version, which
 * pg_get_loaded_modules() shows.  QC_VERSION comes from the control file,
 * through the Makefile.
 */
#if PG_VERSION_NUM >= 180000
#define QC_MODULE_MAGIC PG_MODULE_MAGIC_EXT(.name = "queryclaw_ext", .version = QC_VERSION)
#else
#define QC_MODULE_MAGIC PG_MODULE_MAGIC
#endif

/* 16 turned pg_proc_aclcheck() into object_aclcheck() on any catalog. */
#if PG_VERSION_NUM >= 160000
#include "catalog/pg_proc.h"
#include "utils/acl.h"
#define qc_proc_aclcheck(fn, role, mode) \
	object_aclcheck(ProcedureRelationId, (fn), (role), (mode))
#else
#define qc_proc_aclcheck(fn, role, mode) pg_proc_aclcheck((fn), (role), (mode))
#endif

/* ... and pg_foreign_server_aclcheck() likewise. */
#if PG_VERSION_NUM >= 160000
#include "catalog/pg_foreign_server.h"
#include "utils/acl.h"
#define qc_foreign_server_aclcheck(srv, role, mode) \
	object_aclcheck(ForeignServerRelationId, (srv), (role), (mode))
#else
#include "utils/acl.h"
#define qc_foreign_server_aclcheck(srv, role, mode) \
	pg_foreign_server_aclcheck((srv), (role), (mode))
#endif

/*
 * May role member SET ROLE to role?  16 made it take the membership's SET
 * option, where 15 takes membership alone.
 */
#if PG_VERSION_NUM >= 160000
#define qc_can_set_role(member, role) member_can_set_role((member), (role))
#else
#define qc_can_set_role(member, role) is_member_of_role((member), (role))
#endif

/*
 * JSON parser callbacks return a JsonParseErrorType from 16 on (void
 * before): a callback is declared QcJsonActionResult and ends with
 * QC_JSON_ACTION_DONE.  17 gave makeJsonLexContextCstringLen() a context
 * to fill (NULL: allocate one) as its first argument.
 */
#if PG_VERSION_NUM >= 160000
typedef JsonParseErrorType QcJsonActionResult;
#define QC_JSON_ACTION_DONE return JSON_SUCCESS
#else
typedef void QcJsonActionResult;
#define QC_JSON_ACTION_DONE return
#endif

#if PG_VERSION_NUM >= 170000
#define qc_json_lex_cstring(json, len, encoding, need_escapes) \
	makeJsonLexContextCstringLen(NULL, (json), (len), (encoding), (need_escapes))
#else
#define qc_json_lex_cstring(json, len, encoding, need_escapes) \
	makeJsonLexContextCstringLen((json), (len), (encoding), (need_escapes))
#endif

/* 18 takes the bytes to encode, and gives the bytes decoded, in base64 as uint8, not char. */
#if PG_VERSION_NUM >= 180000
#define qc_b64_encode(src, len, dst, dstlen) \
	pg_b64_encode((const uint8 *) (src), (len), (dst), (dstlen))
#define qc_b64_decode(src, len, dst, dstlen) \
	pg_b64_decode((src), (len), (uint8 *) (dst), (dstlen))
#else
#define qc_b64_encode(src, len, dst, dstlen) \
	pg_b64_encode((src), (len), (dst), (dstlen))
#define qc_b64_decode(src, len, dst, dstlen) \
	pg_b64_decode((src), (len), (dst), (dstlen))
#endif

/*
 * A check hook's extra data: the server frees it with free() before 16,
 * with guc_free() from 16 on, so it comes from guc_malloc() there.
 * qc_guc_extra() turns a malloc'd block of size bytes (the policy lists,
 * parsed by the pure C rules.c) into extra data; NULL, with err set, when
 * out of memory.
 */
#if PG_VERSION_NUM >= 160000
#define qc_guc_malloc(size) guc_malloc(LOG, (size))
#else
#define qc_guc_malloc(size) malloc(size)
#endif
extern void *qc_guc_extra(void *block, size_t size, char *err, size_t errlen);

/*
 * Wait events: from 17 on, each wait has a name of its own in
 * pg_stat_activity.wait_event (QueryclawHttp, ...) rather than the
 * generic "Extension"; qc_wait_event() gives the one to report.
 */
typedef enum QcWaitEvent
{
	QC_WAIT_HTTP,				/* a transfer in flight */
	QC_WAIT_DNS,				/* a name being resolved */
	QC_WAIT_AUDIT_QUEUE,		/* a caller waiting for room in the audit queue */
	QC_WAIT_AUDIT_WORKER,		/* the audit worker idle, or gathering a burst */
	QC_WAIT_RETRY,				/* the pause before a request is retried */
	QC_WAIT_REQUESTS,			/* queryclaw.wait() for asynchronous requests */
	QC_WAIT_ASYNC_WORKER,		/* an async worker idle, waiting for requests */
	QC_WAIT_CALLBACK_WORKER,	/* a callback worker idle, waiting for callbacks */
	QC_WAIT_ENRICH_WORKER,		/* the enrichment worker idle, between looks */
	QC_WAIT_DATABASE,			/* a worker waiting for queryclaw.database to exist */
	QC_WAIT_SERVER_RATE,		/* a call waiting for its foreign server's rate_limit */
	QC_WAIT_COUNT
} QcWaitEvent;

extern uint32 qc_wait_event(QcWaitEvent event);

/*
 * A database that a DROP DATABASE interrupted left behind refuses
 * connections; pg_database.datconnlimit says so from 15.4 and 16 on
 * (before, such a database cannot be).
 */
#include "catalog/pg_database.h"
#ifdef DATCONNLIMIT_INVALID_DB
#define qc_database_is_invalid(form) ((form)->datconnlimit == DATCONNLIMIT_INVALID_DB)
#else
#define qc_database_is_invalid(form) false
#endif

/*
 * 18 dropped ExecutorRun's execute_once: a hook is declared with
 * QC_EXECUTOR_RUN_PARAMS and passes QC_EXECUTOR_RUN_ARGS on.
 */
#if PG_VERSION_NUM >= 180000
#define QC_EXECUTOR_RUN_PARAMS \
	QueryDesc *queryDesc, ScanDirection direction, uint64 count
#define QC_EXECUTOR_RUN_ARGS queryDesc, direction, count
#else
#define QC_EXECUTOR_RUN_PARAMS \
	QueryDesc *queryDesc, ScanDirection direction, uint64 count, bool execute_once
#define QC_EXECUTOR_RUN_ARGS queryDesc, direction, count, execute_once
#endif


/*
 * An UPDATE's RETURNING in the raw parse tree: a list before PostgreSQL 18,
 * a ReturningClause from 18 on (it gained OLD and NEW); NULL when none.
 */
#if PG_VERSION_NUM >= 180000
#define QC_UPDATE_RETURNING(stmt) ((void *) (stmt)->returningClause)
#else
#define QC_UPDATE_RETURNING(stmt) ((void *) (stmt)->returningList)
#endif

#endif							/* QC_COMPAT_H */
