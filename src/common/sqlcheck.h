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

/*
 * While on, a call of a function the check would refuse fails (42501),
 * unless the function is built in: on while a caller's statement is
 * parsed, since reading its literals can run code.
 */
extern void qc_sql_guard(bool on);

#endif							/* QC_SQLCHECK_H */
