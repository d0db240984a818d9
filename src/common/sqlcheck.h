/*-------------------------------------------------------------------------
 *
 * sqlcheck.h
 *	  What a statement given to sql_query may run (sqlcheck.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef QC_SQLCHECK_H
#define QC_SQLCHECK_H

#include "executor/spi.h"

/*
 * Refuse (42501) the prepared statement unless it is one plain SELECT
 * whose planning and execution can run only the functions allowed: see
 * sqlcheck.c.  Called before the statement is planned.
 */
extern void qc_sql_check_statement(SPIPlanPtr plan);

/* What the guard refuses (sqlcheck.c). */
typedef enum QcSqlGuard
{
	QC_GUARD_OFF,
	QC_GUARD_PARSE,				/* the caller's statement is parsed */
	QC_GUARD_RUN,				/* it is planned and run */
} QcSqlGuard;

/*
 * While on, a function the check would refuse fails (42501) as an
 * expression that calls it is made ready to run, built in or not; while
 * parsing, also as any function that is not built in is called.
 */
extern void qc_sql_guard(QcSqlGuard mode);

#endif							/* QC_SQLCHECK_H */
