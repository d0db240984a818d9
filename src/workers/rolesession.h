/*-------------------------------------------------------------------------
 *
 * rolesession.h
 *	  A role's session inside an async worker: its stored settings and
 *	  identity around its requests and callbacks, and nothing of it left
 *	  for the next role (rolesession.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef QC_ROLESESSION_H
#define QC_ROLESESSION_H

/* A role's stored settings (ALTER ROLE/DATABASE ... SET), as its login reads them. */
typedef struct QcRoleSettings QcRoleSettings;

/* Where a role's scope began, to leave it again. */
typedef struct QcRoleScope
{
	int			nest;			/* GUC nest level */
	Oid			save_userid;
	int			save_sec_context;
} QcRoleScope;

/* Read the settings stored for role in this database (current memory context). */
extern QcRoleSettings *qc_role_settings_load(Oid role);

/*
 * Act as the role: its settings over the server's, its identity inside a
 * security-restricted operation (when the role still exists).  Leaving
 * undoes every setting made since, the role's own SETs included.
 */
extern void qc_role_enter(const QcRoleSettings *settings, QcRoleScope *scope);
extern void qc_role_leave(const QcRoleScope *scope);

/* Is queryclaw.enabled off for the role? */
extern bool qc_role_paused(Oid role);

/*
 * Run fn(arg), a callback of the role's, as its session would: in its
 * scope, read-only when its default_transaction_read_only is on, within
 * queryclaw.callback_timeout and its statement_timeout (57014 past them).
 */
extern void qc_role_run_callback(const QcRoleSettings *settings,
								 void (*fn) (void *arg), void *arg);

/*
 * Forget what a callback left in the worker's session (its timer, session
 * advisory locks, prepared statements, cursors, LISTEN, temporary objects,
 * sequence values): called after every callback, whether it ended well or
 * not, outside its subtransaction.
 */
extern void qc_role_forget_callback(void);

#endif							/* QC_ROLESESSION_H */
