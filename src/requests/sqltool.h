/*-------------------------------------------------------------------------
 *
 * sqltool.h
 *	  The database as a read-only tool (sqltool.c): sql_query, list_tables
 *	  and describe_table.
 *
 *-------------------------------------------------------------------------
 */
#ifndef QC_SQLTOOL_H
#define QC_SQLTOOL_H

/* What offering the database tools needs EXECUTE on. */
#define QC_SQL_QUERY_SIGNATURE "queryclaw.sql_query(text)"

/*
 * Each runs as the calling role in a read-only subtransaction that is
 * always rolled back, writes an audit row (audit_extra: more detail
 * members, or NULL) and returns JSON text of at most about max_chars
 * characters; a refusal is 42501, a timeout 54000.
 */
extern char *qc_sql_query(const char *sql, int max_chars, const char *audit_extra);
extern char *qc_sql_list_tables(const char *schema, int max_chars,
								const char *audit_extra);
extern char *qc_sql_describe_table(const char *table, int max_chars,
								   const char *audit_extra);

#endif							/* QC_SQLTOOL_H */
